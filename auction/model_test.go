package auction

import (
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/attest/golden"
)

// TestJobSpecModel: model and model_size reach the canonical spec and the
// RFQ; a spec without them keeps its CID (the golden specs pin that), and
// each mistake gets its own message.
func TestJobSpecModel(t *testing.T) {
	hexDigest := strings.Repeat("1", 64)
	plain := mustParseSpec(t, specBase)
	s := mustParseSpec(t, specBase+"model: Llama-3.1-8B@sha256:"+hexDigest+"\nmodel_size: 16GB\n")
	if specCID(t, s) == specCID(t, plain) {
		t.Error("naming a model left the spec's CID unchanged: providers could not see it")
	}
	r := specRFQ(t, s)
	want := ModelRef{ID: "llama-3.1-8b@sha256:" + hexDigest, SizeMiB: 15_259}
	if r.Model == nil || *r.Model != want {
		t.Errorf("RFQ model = %+v, want %+v", r.Model, want)
	}
	if specRFQ(t, plain).Model != nil {
		t.Error("a spec without a model put one in its RFQ")
	}
	var flags JobSpec
	for _, kv := range [][2]string{{"image", specImage}, {"max-price", "1.80"}, {"duration", "2h"},
		{"model", "llama-3.1-8b@sha256:" + hexDigest}, {"model-size", "15259MiB"}} {
		if err := flags.Set(kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	if specCID(t, &flags) != specCID(t, s) {
		t.Error("the same model given as flags, in MiB and lower case, has another CID")
	}
	for _, tc := range []struct{ yaml, want string }{
		{"model: llama@sha256:" + hexDigest + "\n", "model_size: missing: the size of model"},
		{"model_size: 16GB\n", "model_size: set without model"},
		{"model: llama\nmodel_size: 1GB\n", `model: "llama" is neither a CID nor NAME@sha256:<64 hex>`},
		{"model: llama@sha256:abc\nmodel_size: 1GB\n", "the digest must be sha256:<64 hex>"},
		{"model: llama@sha256:" + hexDigest + "\nmodel_size: 20TB\n", `model_size: "20TB" exceeds`},
		{"model: llama@sha256:" + hexDigest + "\nmodel_size: [1]\n", "model_size: want a single value"},
	} {
		_, err := ParseJobSpec([]byte(specBase + tc.yaml))
		if !errors.Is(err, ErrInvalidJobSpec) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one containing %q", tc.yaml, err, tc.want)
		}
	}
}

// TestRFQModelGolden pins the encoding of an RFQ that names a model, and
// checks that one without keeps its bytes and decodes with no model.
// Regenerate with: go test ./auction -run TestRFQModelGolden -update
func TestRFQModelGolden(t *testing.T) {
	r := msgRFQ(t)
	plain, err := attest.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "rfq.golden"), hex.EncodeToString(plain)+"\n")
	r.Model = &ModelRef{ID: testModelID, SizeMiB: 15_258}
	payload, err := attest.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "rfq-model.golden"), hex.EncodeToString(payload)+"\n")
	key, _ := testKey(t, msgRenterSeed)
	raw, err := SealRFQ(r, key)
	if err != nil {
		t.Fatal(err)
	}
	back, _, err := OpenRFQ(raw)
	if err != nil {
		t.Fatal(err)
	}
	if back.Model == nil || *back.Model != *r.Model {
		t.Errorf("round trip model = %+v", back.Model)
	}
	for _, bad := range []ModelRef{{ID: "Llama@sha256:" + strings.Repeat("1", 64), SizeMiB: 1}, {ID: testModelID}, {ID: testModelID, SizeMiB: MaxModelSizeMiB + 1}} {
		r.Model = &bad
		if err := r.Validate(); err == nil || !strings.Contains(err.Error(), "model.") {
			t.Errorf("RFQ with model %+v: Validate = %v", bad, err)
		}
	}
}

// TestCapacityModels pins a record listing held models and its bounds;
// the record of before the field (capacity.golden) keeps its bytes.
// Regenerate with: go test ./auction -run TestCapacityModels -update
func TestCapacityModels(t *testing.T) {
	key, _ := testKey(t, 1)
	c := fixtureCapacity(t, 1)
	c.Models = []string{testModelID, "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy"}
	raw := mustSealCapacity(t, c, key)
	back, _, err := OpenCapacity(raw)
	if err != nil {
		t.Fatal(err)
	}
	if !back.Holds(testModelID) || back.Holds("other@sha256:"+strings.Repeat("2", 64)) {
		t.Errorf("Holds on the decoded record: models %v", back.Models)
	}
	payload, err := attest.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "capacity-models.golden"), hex.EncodeToString(payload)+"\n")

	many := make([]string, MaxHeldModels+1)
	for i := range many {
		many[i] = fmt.Sprintf("m%d@sha256:%s", i, strings.Repeat("3", 64))
	}
	for _, tc := range []struct {
		models []string
		want   string
	}{
		{many, fmt.Sprintf("models: %d entries, at most %d", MaxHeldModels+1, MaxHeldModels)},
		{[]string{testModelID, testModelID}, "duplicate"},
		{[]string{"Llama@sha256:" + strings.Repeat("1", 64)}, "not a model ID in canonical form"},
	} {
		c.Models = tc.models
		if err := c.Validate(); !errors.Is(err, ErrInvalidCapacity) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("models %d entries: Validate = %v, want %q", len(tc.models), err, tc.want)
		}
	}
}
