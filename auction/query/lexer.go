package query

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

type tokKind int

const (
	tEOF tokKind = iota
	tWord
	tString
	tOp
	tLBrack
	tRBrack
	tComma
)

type token struct {
	kind  tokKind
	text  string // the word, the unquoted string, or the operator
	pos   int    // byte offset of the token's first byte
	space bool   // whitespace (or the start of input) precedes the token
}

func (t token) describe() string {
	switch t.kind {
	case tEOF:
		return "end of query"
	case tString:
		return fmt.Sprintf("string %q", t.text)
	case tLBrack, tRBrack, tComma:
		return fmt.Sprintf("%q", t.text)
	}
	return fmt.Sprintf("%q", t.text)
}

// isWordByte: words hold field names (price.gold), values (h100-80gb,
// 2.5, 80GiB, 9.0) and CIDs. Everything else is punctuation or an error.
func isWordByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' ||
		strings.IndexByte("._-:/+*@$%", b) >= 0
}

// lex splits s into tokens. Quoted strings take "..." or '...' with a
// backslash escaping the next byte.
func lex(s string) ([]token, error) {
	var toks []token
	space := true
	for i := 0; i < len(s); {
		b := s[i]
		switch {
		case b == ' ' || b == '\t' || b == '\n' || b == '\r':
			space = true
			i++
			continue
		case isWordByte(b):
			j := i
			for j < len(s) && isWordByte(s[j]) {
				j++
			}
			toks = append(toks, token{tWord, s[i:j], i, space})
			i = j
		case b == '"' || b == '\'':
			var sb strings.Builder
			j := i + 1
			for ; j < len(s) && s[j] != b; j++ {
				if s[j] == '\\' && j+1 < len(s) {
					j++
				}
				sb.WriteByte(s[j])
			}
			if j >= len(s) {
				return nil, &Error{Pos: i, Msg: "unterminated quoted string"}
			}
			toks = append(toks, token{tString, sb.String(), i, space})
			i = j + 1
		case b == '=' || b == '!' || b == '<' || b == '>':
			j := i + 1
			if j < len(s) && s[j] == '=' {
				j++
			}
			op := s[i:j]
			if op == "!" {
				return nil, &Error{Pos: i, Msg: `unexpected "!" (did you mean "!="?)`}
			}
			toks = append(toks, token{tOp, op, i, space})
			i = j
		case b == '[':
			toks = append(toks, token{tLBrack, "[", i, space})
			i++
		case b == ']':
			toks = append(toks, token{tRBrack, "]", i, space})
			i++
		case b == ',':
			toks = append(toks, token{tComma, ",", i, space})
			i++
		default:
			r, _ := utf8.DecodeRuneInString(s[i:])
			return nil, &Error{Pos: i, Msg: fmt.Sprintf("unexpected character %q", r)}
		}
		space = false
	}
	return append(toks, token{tEOF, "", len(s), true}), nil
}
