// Package templates holds the space templates of `mew init`: the built-in
// ones, embedded in the binary, and those found in a space's templates/
// folder or in ~/.mew/templates/.
//
// A template is a folder with template.json (name, description, variables),
// space.yaml with {{VAR}} placeholders, and optionally agents/, files the
// space's participants run, copied to .mew/agents/. Render fills the
// placeholders: each variable's value, and for each variable X also X_JSON,
// its value as a JSON string (to put into a JSON setting such as
// MEW_AGENT_CONFIG). A placeholder that names no variable is still filled
// (by `mew init`, from its flags or the environment) or rendered empty: the
// reference's templates are read as they are, unknown template.json members
// included.
package templates
