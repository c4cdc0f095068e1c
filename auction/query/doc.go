// Package query is the typed, strict market query language behind
// `idlegrid market search`:
//
//	gpu=h100 vram>=80GB region in [de,fr] price<=2.5 reliability>=0.9
//
// A query is a list of `field op value` terms separated by spaces, all of
// which must hold (AND). Every field has a type, and a term that does not
// fit its field's type (an unknown field, a bad unit, `region<de`, a price
// with sub-micro-dollar precision) is a parse error that names the column
// and, where it can, the closest valid spelling. No clause is ever dropped
// or ignored: that silent failure mode is what this package exists to rule
// out (see notes/market-anchors.md, Vast.ai).
//
// [Parse] turns text into a [Query]; [Query.Match] tests one [Offer];
// [Explain] counts, clause by clause in query order, how many offers each
// clause removed; [Search] filters, sorts ([ParseSort]) and limits. All are
// pure functions of their inputs. docs/query.md is the user reference for
// every field, unit and rule.
package query
