package auction

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/attest/golden"
)

// TestDocFieldPresence keeps docs/protocol.md §5.3 equal to the codec: for
// every record kind, which keys are always on the wire and which are
// omitted when their value is zero, false or empty. Strict decoding
// re-encodes every payload, so this is wire format (an explicit zero of
// an omitted key is refused). The table is generated from the types'
// CBOR tags; after a change, rewrite it with
// go test ./auction -run TestDocFieldPresence -update
func TestDocFieldPresence(t *testing.T) {
	kinds := []attest.Payload{
		&Capacity{}, &Digest{}, &RFQ{}, &Bid{}, &Award{}, &LeaseAcceptance{}, &Decline{}, &PreemptNotice{},
		&AwardSummary{}, &AbandonNote{}, &attest.Entry{}, &attest.Voucher{}, &attest.Receipt{}, &attest.FraudProof{},
		&attest.WrongResultProof{},
	}
	var b strings.Builder
	b.WriteString("| kind | always present, even when zero | omitted when zero, false or empty |\n|---|---|---|\n")
	for _, k := range kinds {
		var always, omitted []string
		presence(reflect.TypeOf(k).Elem(), "", &always, &omitted)
		fmt.Fprintf(&b, "| %s | %s | %s |\n", k.RecordKind().Name, codeList(always), codeList(omitted))
	}
	golden.CheckSection(t, "../docs/protocol.md", "field-presence", b.String())
}

// presence sorts the CBOR keys of struct type t (and of the structs it
// holds, as "outer.inner" and "list[].inner") by whether they are omitted
// when empty.
func presence(t reflect.Type, prefix string, always, omitted *[]string) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, ok := f.Tag.Lookup("cbor")
		if !ok || tag == "-" || !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		key := prefix + name
		if strings.Contains(","+opts+",", ",omitempty,") {
			*omitted = append(*omitted, key)
		} else {
			*always = append(*always, key)
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch {
		case ft.Kind() == reflect.Struct:
			presence(ft, key+".", always, omitted)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			presence(ft.Elem(), key+"[].", always, omitted)
		}
	}
}

func codeList(keys []string) string {
	if len(keys) == 0 {
		return "—"
	}
	return "`" + strings.Join(keys, "`, `") + "`"
}
