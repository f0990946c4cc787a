// Package mcpserver holds the MCP servers that ship with mew, served over
// stdio (or, with --http, streamable HTTP) by `mew mcp calculator`, `mew mcp
// cat-maze` and `mew mcp filesystem DIR` so that a space (the demo, the
// built-in templates) has tools without Node or a network. Each declares
// completions and answers completion/complete with an empty list (it has
// no prompts or resource templates):
//
//   - Calculator: add, subtract, multiply, divide.
//   - CatMaze: the reference's maze game, in mazes of our own: guide the
//     cat through ten levels with view, up, down, left, right and restart;
//     each result is the board as text and the game's state as structured
//     content.
//   - Filesystem: the tools of the reference filesystem server that a space
//     needs (read_text_file, read_file, write_file, list_directory,
//     directory_tree, create_directory, move_file, search_files,
//     get_file_info, list_allowed_directories), confined to one directory
//     with os.Root: no path, .. or symbolic link reaches outside it.
package mcpserver
