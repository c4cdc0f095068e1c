package attest

import (
	"bytes"
	"errors"
	"fmt"
	"sync"

	"github.com/fxamacker/cbor/v2"
)

// Decoder limits. A record is at most a few tens of KiB, so these bound the
// work a hostile payload can cause long before the size limit would.
const (
	maxNestedLevels  = 16
	maxArrayElements = 4096
	maxMapPairs      = 1024
)

var (
	encMode    cbor.UserBufferEncMode
	strictDec  cbor.DecMode // rejects unknown fields: the real decode
	versionDec cbor.DecMode // ignores unknown fields: only reads "v"
)

func init() {
	var err error
	// Core deterministic encoding: shortest integers, sorted map keys,
	// definite lengths. Together with the canonical-bytes check in Open it
	// makes a payload's bytes a function of its value.
	if encMode, err = cbor.CoreDetEncOptions().UserBufferEncMode(); err != nil {
		panic(fmt.Sprintf("attest: cbor encoder options: %v", err))
	}
	opts := decOptions()
	if strictDec, err = opts.DecMode(); err != nil {
		panic(fmt.Sprintf("attest: cbor decoder options: %v", err))
	}
	opts.ExtraReturnErrors = cbor.ExtraDecErrorNone
	if versionDec, err = opts.DecMode(); err != nil {
		panic(fmt.Sprintf("attest: cbor version decoder options: %v", err))
	}
}

func decOptions() cbor.DecOptions {
	return cbor.DecOptions{
		DupMapKey:         cbor.DupMapKeyEnforcedAPF,
		MaxNestedLevels:   maxNestedLevels,
		MaxArrayElements:  maxArrayElements,
		MaxMapPairs:       maxMapPairs,
		IndefLength:       cbor.IndefLengthForbidden,
		TagsMd:            cbor.TagsForbidden,
		ExtraReturnErrors: cbor.ExtraDecErrorUnknownField,
		UTF8:              cbor.UTF8RejectInvalid,
		FieldNameMatching: cbor.FieldNameMatchingCaseSensitive,
		NaN:               cbor.NaNDecodeForbidden,
		Inf:               cbor.InfDecodeForbidden,
	}
}

// Marshal encodes v as canonical CBOR (core deterministic encoding).
func Marshal(v any) ([]byte, error) {
	b, err := encMode.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("attest.Marshal: %w", err)
	}
	return b, nil
}

// Unmarshal decodes data into v with the strict decoder: unknown fields,
// duplicate map keys, tags, indefinite lengths, invalid UTF-8 and trailing
// bytes are errors, and nesting and lengths are bounded. Errors wrap
// [ErrMalformed]. It does not check that data is canonical; [Open] does.
func Unmarshal(data []byte, v any) error {
	if err := strictDec.Unmarshal(data, v); err != nil {
		return fmt.Errorf("attest.Unmarshal: %w: %w", ErrMalformed, unknownField(err))
	}
	return nil
}

// unknownField marks a decode error caused by a field this build does not
// know as [ErrOtherVersion]: a newer release added it.
func unknownField(err error) error {
	var uf *cbor.UnknownFieldError
	if errors.As(err, &uf) {
		return fmt.Errorf("%w: %w", ErrOtherVersion, err)
	}
	return err
}

// payloadVersion reads only the "v" key of a payload map, ignoring the rest,
// so a newer payload with fields we do not know is reported as an unknown
// version rather than as malformed.
func payloadVersion(data []byte) (uint, error) {
	var probe struct {
		V uint `cbor:"v"`
	}
	if err := versionDec.Unmarshal(data, &probe); err != nil {
		return 0, err
	}
	return probe.V, nil
}

var canonBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// isCanonical reports whether v, encoded canonically, is exactly data. It
// encodes into a pooled buffer: the bytes are only compared.
func isCanonical(v any, data []byte) bool {
	buf := canonBufs.Get().(*bytes.Buffer)
	buf.Reset()
	err := encMode.MarshalToBuffer(v, buf)
	ok := err == nil && bytes.Equal(buf.Bytes(), data)
	if buf.Cap() <= 256<<10 {
		canonBufs.Put(buf)
	}
	return ok
}
