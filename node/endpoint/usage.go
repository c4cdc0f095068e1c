package endpoint

import (
	"bytes"
	"encoding/json"
)

// usage is the token count an answer reported.
type usage struct {
	PromptTokens     uint64 `json:"prompt_tokens"`
	CompletionTokens uint64 `json:"completion_tokens"`
}

// Bounds on what is kept of an answer to read its usage: a JSON body
// longer than maxJSONBody, or an event line longer than maxEventLine, is
// relayed but not read.
const (
	maxJSONBody  = 4 << 20
	maxEventLine = 256 << 10
)

// usageReader reads an answer's usage from its bytes as they are relayed:
// a JSON body whole at its end, a stream of server-sent events line by
// line (the chunk carrying usage is the final one; the last seen counts).
type usageReader struct {
	events   bool
	buf      []byte
	overflow bool
	u        usage
	seen     bool
}

func (ur *usageReader) write(p []byte) {
	if !ur.events {
		if ur.overflow || len(ur.buf)+len(p) > maxJSONBody {
			ur.overflow, ur.buf = true, nil
			return
		}
		ur.buf = append(ur.buf, p...)
		return
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			ur.appendLine(p)
			return
		}
		ur.appendLine(p[:i])
		if !ur.overflow {
			ur.event(ur.buf)
		}
		ur.buf, ur.overflow = ur.buf[:0], false
		p = p[i+1:]
	}
}

func (ur *usageReader) appendLine(p []byte) {
	if ur.overflow || len(ur.buf)+len(p) > maxEventLine {
		ur.overflow, ur.buf = true, ur.buf[:0]
		return
	}
	ur.buf = append(ur.buf, p...)
}

// event reads one line of an event stream: a "data:" line whose JSON
// carries a usage object.
func (ur *usageReader) event(line []byte) {
	data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r"), []byte("data:"))
	if !ok || !bytes.Contains(data, []byte(`"usage"`)) {
		return
	}
	ur.parse(data)
}

func (ur *usageReader) parse(b []byte) {
	var v struct {
		Usage *usage `json:"usage"`
	}
	if json.Unmarshal(b, &v) == nil && v.Usage != nil {
		ur.u, ur.seen = *v.Usage, true
	}
}

// result is the usage read, once the answer ended.
func (ur *usageReader) result() usage {
	if !ur.events && !ur.overflow && bytes.Contains(ur.buf, []byte(`"usage"`)) {
		ur.parse(ur.buf)
	}
	return ur.u
}
