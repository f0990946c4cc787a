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
