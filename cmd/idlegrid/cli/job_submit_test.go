package cli

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/auction"
)

// TestSubmitReplicaFlagsOverrideTheFile: --replicas, --verifier and
// --replica-regions win over the spec file's fields, and the spec the
// daemon gets parses with the flags' values; without a flag the file goes
// as it is.
func TestSubmitReplicaFlagsOverrideTheFile(t *testing.T) {
	const (
		module   = "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy"
		inFile   = "bafkreifjjcie6lypi6ny7amxnfftagclbuxndqonfipmb64f2km2devei4"
		onFlag   = "bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku"
		specText = "module: " + module + "\nmax_price: 1\nduration: 1m\nreplicas: 2\nverifier: " + inFile + "\n"
	)
	file := filepath.Join(t.TempDir(), "job.yaml")
	if err := os.WriteFile(file, []byte(specText), 0o600); err != nil {
		t.Fatal(err)
	}
	parse := func(flags ...string) (*auction.JobSpec, []byte, []byte) {
		t.Helper()
		cmd := newJobSubmitCmd(&globals{stdout: io.Discard, stderr: io.Discard})
		if err := cmd.Flags().Parse(flags); err != nil {
			t.Fatal(err)
		}
		body, raw, _, err := submitBody(cmd.Flags(), file, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		spec, err := auction.ParseJobSpec(body)
		if err != nil {
			t.Fatalf("the spec submit sends does not parse: %v\n%s", err, body)
		}
		return spec, body, raw
	}

	spec, body, raw := parse("--replicas", "3", "--verifier", onFlag, "--replica-regions", "distinct")
	if spec.Replicas != 3 || spec.Verifier != onFlag || !spec.ReplicaRules().DistinctRegions {
		t.Fatalf("sent replicas %d, verifier %s, replica_regions %q; want the flags' 3, %s and distinct\n%s",
			spec.Replicas, spec.Verifier, spec.ReplicaRegions, onFlag, body)
	}
	if bytes.Equal(body, raw) {
		t.Fatal("flags set, but the file was sent as it is")
	}

	spec, body, raw = parse()
	if spec.Replicas != 2 || spec.Verifier != inFile || !bytes.Equal(body, raw) {
		t.Fatalf("no flags: sent replicas %d, verifier %s (the file as it is: %v), want the file's 2 and %s", spec.Replicas, spec.Verifier, bytes.Equal(body, raw), inFile)
	}
}

// TestEveryJobSpecFieldHasAFlag: docs/jobspec.md promises that each field
// is a flag; command and env have their own forms (the arguments after
// --, and --env KEY=VALUE).
func TestEveryJobSpecFieldHasAFlag(t *testing.T) {
	flagged := map[string]bool{"command": true, "env": true}
	for _, sf := range specFlags {
		flagged[sf.field] = true
	}
	typ := reflect.TypeFor[auction.JobSpec]()
	for i := range typ.NumField() {
		tag, _, _ := strings.Cut(typ.Field(i).Tag.Get("yaml"), ",")
		if tag == "" || tag == "-" {
			continue
		}
		if !flagged[tag] {
			t.Errorf("job spec field %s has no job submit flag", tag)
		}
	}
}

// TestSubmitServiceScalingFlags: --near and the scaling flags reach the
// spec the daemon parses.
func TestSubmitServiceScalingFlags(t *testing.T) {
	cmd := newJobSubmitCmd(&globals{stdout: io.Discard, stderr: io.Discard})
	err := cmd.Flags().Parse([]string{
		"--kind", "service", "--image", "example.org/llm@sha256:" + strings.Repeat("a", 64), "--ports", "8080",
		"--max-price", "2", "--duration", "1h", "--replicas", "2", "--near", "de,nl",
		"--min-replicas", "1", "--max-replicas", "4", "--scale-in-flight", "8", "--scale-window", "1m", "--max-usd-per-mtok", "0.8",
	})
	if err != nil {
		t.Fatal(err)
	}
	body, _, _, err := submitBody(cmd.Flags(), "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := auction.ParseJobSpec(body)
	if err != nil {
		t.Fatalf("the spec submit sends does not parse: %v\n%s", err, body)
	}
	lo, hi := spec.ReplicaBounds()
	inFlight, window := spec.ScaleRule()
	if lo != 1 || hi != 4 || inFlight != 8 || window != time.Minute || spec.MaxUSDPerMTok != 0.8 || strings.Join(spec.Near, ",") != "de,nl" {
		t.Fatalf("sent replicas %d..%d, in flight %d per %s, cap %v, near %v; want 1..4, 8 per 1m0s, 0.8, [de nl]\n%s",
			lo, hi, inFlight, window, spec.MaxUSDPerMTok, spec.Near, body)
	}
}
