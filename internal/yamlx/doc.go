// Package yamlx reads YAML documents with errors that say where: each
// *Error has the line and the key path ("participants.helper.args[1]") of
// the value at fault.
//
// Decode parses one document and refuses what would be costly to walk:
// too many node-making characters, nesting too deep, aliases that expand
// too far (the "billion laughs") or refer to the node that holds them.
// The readers (Mapping, Pairs, String, Bool, StringList, AppendJSON)
// follow aliases, apply merge keys (<<) and return their errors; callers
// that collect problems instead of stopping at the first do so
// explicitly. Describe and DescribeKind name a node for "want X, got Y"
// messages.
//
// The space configuration (space.yaml), tools-agent definitions and
// agent configuration files are read with it.
package yamlx
