// Package jsontape indexes a JSON document in one pass into a flat "tape" of
// nodes, so that the envelope decoder and the capability matcher can look at
// the same bytes many times without decoding them into maps.
//
// A tape is a slice of [Node] in document order. Every node records its kind,
// its byte span in the source and the index of the node that follows its
// subtree, so a reader can skip a whole object or array in O(1). An object's
// members follow it as (key, value) pairs; an array's elements follow it in
// order. Nothing is copied: strings are spans of the source, unescaped only when
// a reader asks and they hold an escape.
//
// Parsing is strict, because the gateway decides on what it parsed and a
// recipient may decode the same bytes differently if the gateway was lenient:
// the grammar of RFC 8259, valid UTF-8 in strings, no duplicate keys in an
// object (a recipient would see the last value, a matcher the first), a bounded
// nesting depth, and nothing but white space after the value.
//
// A [Tape] can be reused: Parse resets it and keeps its buffers, which is how
// the hot paths stay free of allocations.
package jsontape
