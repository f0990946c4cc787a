// Package space loads a space's configuration (space.yaml) and keeps its
// participants' tokens.
//
// # Configuration
//
// [Load] and [Parse] read the space.yaml format of the reference MEW
// implementation: a space section, participants keyed by their logical id,
// defaults, gateway_logging and floor_control. Every key is checked for its
// type and every capability pattern is compiled with the capability package,
// so that a mistake is reported when the file is loaded, as a [*ConfigError]
// that names the file, the line and the key:
//
//	space.yaml:12: participants.helper.capabilities[1]: kind is required
//
// Keys that this package does not know are not errors (configurations written
// for other tools keep working); they are listed in [Config.Unknown] so that a
// command can warn about typos. Keys that the reference implementation accepts
// but ignores are known and never listed.
//
// The loader treats the file as untrusted input. It refuses files over
// 4 MiB, files with more than 131,072 of the characters that start YAML
// nodes (which bounds the parser's memory to tens of megabytes), documents
// nested more than 64 levels deep, and alias expansions beyond a million
// nodes or 8 MiB of text, so a hostile configuration can neither hang the
// loader nor exhaust memory.
//
// YAML anchors, aliases and merge keys (<<) may be used anywhere, for example
// to share a list of capabilities between participants.
//
// # Directories
//
// A configuration lives either in <dir>/.mew/space.yaml (the layout that
// mew init writes) or in <dir>/space.yaml; [FindConfig] looks in that order.
// The space's state (tokens, audit logs) lives in [Config.MewDir]: the .mew
// directory beside the file when there is one, else the file's own
// directory.
//
// # Tokens
//
// A token identifies one participant of a space. [TokenStore] finds a
// participant's tokens the way the reference gateway does: the literal
// tokens of the configuration, else the environment variable named by
// [EnvName], else the file <MewDir>/tokens/<id>.token, else a new random
// token written to that file with mode 0600. Tokens never appear in error
// messages.
package space
