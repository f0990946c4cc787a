// Package yamlx reads YAML documents with errors that say where: each
// *Error has the line and the key path ("participants.helper.args[1]") of
// the value at fault.
//
// Decode parses one document and refuses what would be costly to walk:
// too many node-making characters, nesting too deep, aliases that expand
// too far (the "billion laughs") or refer to the node that holds them.
// The readers follow aliases, apply merge keys (<<) and return their
// errors; callers that collect problems instead of stopping at the first
// do so explicitly. Mapping, String, Bool and StringList take null as
// absent; StrictMapping, List, StrictString, StrictBool, Number, Count,
// StrictStringList and StringMap refuse it, and StrictString takes no
// number, boolean or date for a string. Describe names a node for "want
// X, got Y" messages by its kind and value (`a string ("yes")`), and
// DescribeKind by its kind alone, for values that may be secret.
//
// Fields decodes a mapping into a struct by its yaml tags, each member
// read by its field's type with the readers above (or by a Reader of the
// caller's, for values that need a check or context); an unknown key is
// refused with the allowed names and a "did you mean", or handed to the
// caller. It reads nodes already decoded and bounded by Decode: it is not
// a second parser, and it never calls yaml.v3's reflective decoder.
//
// The space configuration (space.yaml), tools-agent definitions and
// agent configuration files are read with it.
package yamlx
