// Package capability compiles MEW capability patterns and decides whether an
// envelope may be sent.
//
// A capability is a JSON object {"kind": P, "payload": Q}: the envelope's kind
// must match P and, when Q is present, its payload must match Q. A list of
// capabilities is compiled once into a [Set] (when a participant joins or a
// grant arrives, never per message); [Set.Match] then says whether an envelope
// is allowed and which pattern allowed it, for the audit log.
//
// # Value patterns
//
// The kind and every payload value may be:
//
//   - an exact value: a string, number (compared numerically), boolean or null;
//   - "*": any value that is present;
//   - a glob containing * or ?: a path glob, where * and ? stay within one
//     "/"-separated segment, a segment that is exactly ** spans any number of
//     segments, a segment that is exactly * needs at least one character, no
//     wildcard matches a segment that starts with "." (so "/public/**" never
//     reaches "/public/../secret"), and \ escapes the next character. Other
//     glob syntax (braces, brackets, extglobs) is taken literally;
//   - "/regex/": an RE2 regular expression, unanchored unless it says so;
//   - "!pattern": a string that the glob or exact pattern does not match
//     (a missing value or a non-string never matches a negation);
//   - an array: any of its items;
//   - an object: a payload pattern for an object value.
//
// # Payload patterns
//
// A payload pattern is an object whose members must all match. A plain key
// names a member that must exist and whose value must match. A key with * or ?
// matches every member whose name matches the glob, and one of them must
// match. A key starting with "$" is a JSONPath expression evaluated against
// the object being matched: it must select at least one value, and one of them
// must match. The key "**" matches when the value matches anywhere in the
// object, the object itself included. An empty payload pattern matches any
// object; a capability without one matches any payload. A payload that is not
// an object is matched as if it were {}.
//
// These are the semantics of the reference implementation's SDK matcher, with
// the decisions of the design page: "*" matches every kind (so {"kind":"*"}
// allows everything), globs are path globs (mcp/* matches mcp/request, not
// mcp/a/b), and an invalid pattern is a compile error naming where it is,
// never a silent non-match at run time.
//
// # Strict compile
//
// Member names are exact. A key may appear only once in any object of a
// pattern (the error names the path of the second one); at the top level only
// kind, payload and the annotations of [Annotations] (id, name, description,
// note, comment: descriptive, never matched) are allowed, so "KIND",
// "Payload" or "to" are errors, not silently ignored members that another
// reader could take for the real ones. A list with one refused pattern
// compiles to no set at all.
//
// # Subsumption
//
// [Set.Covering] and [Set.Subsumes] say whether a set allows every envelope
// another pattern allows, for delegation: what a participant may grant is what
// its own set covers. They work on the compiled form and are sound, not
// complete: a yes is proven; a no may mean "could not be decided", and the
// reason then starts with "cannot decide". A pattern is covered by one
// pattern of the set (so it can be named), whose kind and payload cover its
// own:
//
//   - "*" covers every value; an exact value is covered by what matches it
//     (a glob, a regex, a negation that does not exclude it); numbers
//     compare numerically;
//   - a glob is covered by a glob when its segments align with the other's
//     (mcp/* covers mcp/re*, ** spans segments but not "."-leading ones),
//     and by a negation when no string can match both (judged by their
//     literal prefixes and suffixes);
//   - a regex is covered only by "*" or the same regex; a negation only by
//     "*" or a negation of something it excludes;
//   - an array is covered when each of its items is; an array covers what
//     one of its items covers;
//   - a payload pattern covers another when each of its members is implied
//     by the other's member of the same plain key, recursively, so fewer
//     conditions cover more; no payload pattern (or {}) covers any payload,
//     and a payload pattern with members never covers a pattern without;
//   - a key-glob, "**" or JSONPath member is implied only by an identical
//     member.
//
// The visit budget of deep matches is respected too: an alternative with deep
// or JSONPath conditions tried before the covering one makes the answer
// undecided, so a covering pattern never spends more of the budget than the
// covered one did. Globs too large to compare within a fixed amount of work
// are undecided as well.
//
// # JSONPath
//
// The supported subset: $ (the object being matched), .name and ['name']
// (several names separated by commas), [n] with negative n from the end,
// [start:end:step], .* and [*], .. (descendants, including the node itself),
// and filters [?(@.a.b OP literal)] with OP one of == != < <= > >=, existence
// tests [?(@.a)], ! before an existence test, and && / || between tests (&&
// binds tighter). Literals are strings in single or double quotes, numbers,
// true, false and null.
//
// # Cost
//
// Matching allocates nothing in the steady state: the payload is indexed once
// per call into a pooled tape (and only when some pattern whose kind matched
// looks at the payload), and strings are compared in place. Deep matches and
// JSONPath descents are bounded by a visit budget proportional to the size
// of the payload; a match that exceeds it is refused, which errs on the side
// of denying.
package capability
