package query

import (
	"fmt"
	"github.com/idlegrid/idlegrid/auction"
	"strings"
)

// Op is a comparison operator.
type Op int

// Operators. OpIn and OpNotIn take a list; the others take one value.
const (
	OpEq Op = iota
	OpNe
	OpLt
	OpLe
	OpGt
	OpGe
	OpIn
	OpNotIn
)

var opText = [...]string{OpEq: "=", OpNe: "!=", OpLt: "<", OpLe: "<=", OpGt: ">", OpGe: ">=", OpIn: "in", OpNotIn: "notin"}

func (o Op) String() string { return opText[o] }

func (o Op) list() bool { return o == OpIn || o == OpNotIn }

// Error is a parse error at a byte offset of the query, or of the sort
// key (Pos -1). Error names the operation, for logs; a user-facing edge
// shows Msg and the column instead.
type Error struct {
	Pos int // 0-based byte offset; reported as column Pos+1; -1: the sort key
	Msg string
	op  string // "" is query.Parse
}

func (e *Error) Error() string {
	if e.Pos < 0 {
		return fmt.Sprintf("%s: %s", e.op, e.Msg)
	}
	return fmt.Sprintf("query.Parse: column %d: %s", e.Pos+1, e.Msg)
}

// Clause is one `field op value` term.
type Clause struct {
	Field  string
	Op     Op
	Values []string // canonical spelling of each value
	Pos    int      // byte offset of the field name in the query

	f        *field
	vals     []value
	admitted uint64 // kindChoice: domain values this clause admits
	prefix   uint64 // kindChoice: admitted sets of this and earlier clauses on the field, intersected
}

// String is the clause in canonical form; parsing it gives the same clause.
func (c *Clause) String() string {
	vs := make([]string, len(c.Values))
	for i, v := range c.Values {
		vs[i] = quoteIfNeeded(v)
	}
	if c.Op.list() {
		return c.Field + " " + c.Op.String() + " [" + strings.Join(vs, ",") + "]"
	}
	return c.Field + c.Op.String() + vs[0]
}

// Query is a parsed query: clauses ANDed, in the order written.
type Query struct {
	Clauses []Clause

	hasGPU      bool   // some clause filters GPUs
	tierAllowed uint64 // tiers the query admits (bits over auction.Tiers)
}

// String is the query in canonical form.
func (q *Query) String() string {
	parts := make([]string, len(q.Clauses))
	for i := range q.Clauses {
		parts[i] = q.Clauses[i].String()
	}
	return strings.Join(parts, " ")
}

// MaxQueryLen bounds the input so a pasted blob cannot make parsing or
// matching expensive.
const MaxQueryLen = 4096

// Parse parses a query. The empty query matches every offer.
func Parse(s string) (*Query, error) {
	if len(s) > MaxQueryLen {
		return nil, &Error{Pos: MaxQueryLen, Msg: fmt.Sprintf("query longer than %d bytes", MaxQueryLen)}
	}
	toks, err := lex(s)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	q := &Query{}
	for p.peek().kind != tEOF {
		c, err := p.clause(len(q.Clauses) > 0)
		if err != nil {
			return nil, err
		}
		q.Clauses = append(q.Clauses, c)
	}
	q.finish()
	return q, nil
}

// finish computes what depends on the whole query: whether GPUs are
// filtered, and the running intersection of each choice field's admitted
// sets (so a tier clause's effect, and the tiers "price" uses, follow from
// every tier clause before it).
func (q *Query) finish() {
	running := map[string]uint64{}
	for i := range q.Clauses {
		c := &q.Clauses[i]
		if c.f.perGPU {
			q.hasGPU = true
		}
		if c.f.kind != kindChoice {
			continue
		}
		r, ok := running[c.Field]
		if !ok {
			r = allBits(len(c.f.domain))
		}
		r &= c.admitted
		running[c.Field] = r
		c.prefix = r
	}
	q.tierAllowed = allBits(len(tierNames))
	if r, ok := running["tier"]; ok {
		q.tierAllowed = r
	}
}

func allBits(n int) uint64 { return 1<<n - 1 }

type parser struct {
	toks []token
	i    int
}

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) next() token { t := p.toks[p.i]; p.i++; return t }

func (p *parser) clause(notFirst bool) (Clause, error) {
	ft := p.next()
	if ft.kind != tWord {
		return Clause{}, &Error{Pos: ft.pos, Msg: fmt.Sprintf("expected a field name, found %s", ft.describe())}
	}
	if notFirst && !ft.space {
		return Clause{}, &Error{Pos: ft.pos, Msg: fmt.Sprintf("missing space before %q: terms are separated by spaces", ft.text)}
	}
	f := lookupField(strings.ToLower(ft.text))
	if f == nil {
		return Clause{}, &Error{Pos: ft.pos, Msg: unknownField(ft.text)}
	}
	op, err := p.op(f)
	if err != nil {
		return Clause{}, err
	}
	c := Clause{Field: f.name, Op: op, Pos: ft.pos, f: f}
	raws, err := p.values(f, op)
	if err != nil {
		return Clause{}, err
	}
	for _, rt := range raws {
		v, err := parseValue(f, rt.text)
		if err != nil {
			return Clause{}, &Error{Pos: rt.pos, Msg: err.Error()}
		}
		c.vals = append(c.vals, v)
		c.Values = append(c.Values, v.text)
	}
	if f.kind == kindChoice {
		c.admitted = admittedSet(f, op, c.vals)
	}
	return c, nil
}

func unknownField(name string) string {
	msg := fmt.Sprintf("unknown field %q", name)
	if isUnit(name) {
		return msg + "; a unit goes right after its number, as in vram>=80GiB"
	}
	if sug, ok := auction.Closest(strings.ToLower(name), fieldNames); ok {
		return msg + fmt.Sprintf(" (did you mean %q?)", sug)
	}
	return msg + "; fields: " + strings.Join(fieldNames, ", ")
}

func (p *parser) op(f *field) (Op, error) {
	t := p.next()
	var op Op
	switch {
	case t.kind == tOp:
		switch t.text {
		case "=", "==":
			op = OpEq
		case "!=":
			op = OpNe
		case "<":
			op = OpLt
		case "<=":
			op = OpLe
		case ">":
			op = OpGt
		case ">=":
			op = OpGe
		}
	case t.kind == tWord && strings.EqualFold(t.text, "in") && t.space:
		op = OpIn
	case t.kind == tWord && strings.EqualFold(t.text, "notin") && t.space:
		op = OpNotIn
	default:
		return 0, &Error{Pos: t.pos, Msg: fmt.Sprintf("expected an operator (=, !=, <, <=, >, >=, in, notin) after %s, found %s", f.name, t.describe())}
	}
	if op <= OpNe || op.list() || f.kind.ordered() {
		if f.kind == kindBool && op.list() {
			return 0, &Error{Pos: t.pos, Msg: fmt.Sprintf("operator %s does not apply to %s (%s); use = or !=", op, f.name, f.kind.describe())}
		}
		return op, nil
	}
	allowed := "=, !=, in or notin"
	if f.kind == kindBool {
		allowed = "= or !="
	}
	return 0, &Error{Pos: t.pos, Msg: fmt.Sprintf("operator %s does not apply to %s (%s); use %s", op, f.name, f.kind.describe(), allowed)}
}

// values reads one value, or a bracketed list for in/notin.
func (p *parser) values(f *field, op Op) ([]token, error) {
	t := p.next()
	if !op.list() {
		switch t.kind {
		case tWord, tString:
			return []token{t}, nil
		case tLBrack:
			return nil, &Error{Pos: t.pos, Msg: fmt.Sprintf("a list needs in or notin, as in %s in [a,b]", f.name)}
		}
		return nil, &Error{Pos: t.pos, Msg: fmt.Sprintf("expected a value for %s, found %s", f.name, t.describe())}
	}
	if t.kind != tLBrack {
		return nil, &Error{Pos: t.pos, Msg: fmt.Sprintf("%s needs a list such as [a,b], found %s", op, t.describe())}
	}
	var out []token
	for {
		v := p.next()
		if v.kind != tWord && v.kind != tString {
			if v.kind == tRBrack && len(out) == 0 {
				return nil, &Error{Pos: v.pos, Msg: "empty list"}
			}
			return nil, &Error{Pos: v.pos, Msg: fmt.Sprintf("expected a list value, found %s", v.describe())}
		}
		out = append(out, v)
		sep := p.next()
		if sep.kind == tRBrack {
			return out, nil
		}
		if sep.kind != tComma {
			return nil, &Error{Pos: sep.pos, Msg: fmt.Sprintf("expected \",\" or \"]\" in list, found %s", sep.describe())}
		}
	}
}

// admittedSet is the set of domain values a choice clause lets through,
// taking the operator on a single value: tier!=bronze admits gold, silver.
func admittedSet(f *field, op Op, vals []value) uint64 {
	var in uint64
	for _, v := range vals {
		for i, d := range f.domain {
			if d == v.s {
				in |= 1 << i
			}
		}
	}
	switch op {
	case OpNe, OpNotIn:
		return allBits(len(f.domain)) &^ in
	}
	return in
}

// quoteIfNeeded quotes a value that the lexer would not read back as one
// word.
func quoteIfNeeded(s string) string {
	plain := s != ""
	for i := 0; i < len(s) && plain; i++ {
		plain = isWordByte(s[i])
	}
	if plain && !strings.EqualFold(s, "in") && !strings.EqualFold(s, "notin") {
		return s
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}
