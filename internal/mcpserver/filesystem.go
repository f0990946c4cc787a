package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Limits of the filesystem server.
const (
	maxRead      = 4 << 20 // bytes of one file read
	maxListing   = 10000   // entries of a listing, a tree or a search
	maxTreeDepth = 10
)

type pathIn struct {
	Path string `json:"path" jsonschema:"a path inside the allowed directory, relative to it or absolute"`
}

type writeIn struct {
	Path    string `json:"path" jsonschema:"the file to write, inside the allowed directory"`
	Content string `json:"content" jsonschema:"the file's new content"`
}

type moveIn struct {
	Source      string `json:"source" jsonschema:"the path to move"`
	Destination string `json:"destination" jsonschema:"where to move it (must not exist)"`
}

type searchIn struct {
	Path    string `json:"path" jsonschema:"the directory to search in"`
	Pattern string `json:"pattern" jsonschema:"a glob (such as *.md) or a part of the name to look for"`
}

// fsys is the allowed directory.
type fsys struct {
	dir  string // absolute
	root *os.Root
}

// Filesystem returns the filesystem server for dir, and a function that
// releases the directory once the server is done.
func Filesystem(dir string) (*mcp.Server, func() error, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("mcpserver: %w", err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, nil, fmt.Errorf("mcpserver: %w", err)
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, nil, fmt.Errorf("mcpserver: %w", err)
	}
	f := &fsys{dir: abs, root: root}
	s := mcp.NewServer(&mcp.Implementation{Name: "mew-filesystem", Version: Version},
		serverOptions("Files in "+abs+": every path is inside it (relative paths are relative to it)."))
	read := func(_ context.Context, _ *mcp.CallToolRequest, in pathIn) (*mcp.CallToolResult, any, error) {
		return f.read(in.Path)
	}
	mcp.AddTool(s, &mcp.Tool{Name: "read_text_file", Description: "Read a text file"}, read)
	mcp.AddTool(s, &mcp.Tool{Name: "read_file", Description: "Read a text file (the same as read_text_file)"}, read)
	mcp.AddTool(s, &mcp.Tool{Name: "write_file", Description: "Create a file, or replace its content, with the given text"},
		func(_ context.Context, _ *mcp.CallToolRequest, in writeIn) (*mcp.CallToolResult, any, error) {
			return f.write(in.Path, in.Content)
		})
	mcp.AddTool(s, &mcp.Tool{Name: "list_directory", Description: "List a directory: [DIR] and [FILE] entries"},
		func(_ context.Context, _ *mcp.CallToolRequest, in pathIn) (*mcp.CallToolResult, any, error) {
			return f.list(in.Path)
		})
	mcp.AddTool(s, &mcp.Tool{Name: "directory_tree", Description: "The tree of files under a directory, one path a line"},
		func(_ context.Context, _ *mcp.CallToolRequest, in pathIn) (*mcp.CallToolResult, any, error) {
			return f.walk(in.Path, func(string) bool { return true })
		})
	mcp.AddTool(s, &mcp.Tool{Name: "search_files", Description: "Find files under a directory whose name matches a glob or contains a text"},
		func(_ context.Context, _ *mcp.CallToolRequest, in searchIn) (*mcp.CallToolResult, any, error) {
			if in.Pattern == "" {
				return nil, nil, errors.New("pattern is empty")
			}
			return f.walk(in.Path, func(name string) bool {
				ok, err := path.Match(in.Pattern, name)
				return (err == nil && ok) || strings.Contains(strings.ToLower(name), strings.ToLower(in.Pattern))
			})
		})
	mcp.AddTool(s, &mcp.Tool{Name: "create_directory", Description: "Create a directory (and its parents)"},
		func(_ context.Context, _ *mcp.CallToolRequest, in pathIn) (*mcp.CallToolResult, any, error) {
			rel, err := f.rel(in.Path)
			if err != nil {
				return nil, nil, err
			}
			if err := f.root.MkdirAll(rel, 0o755); err != nil {
				return nil, nil, f.clean(err)
			}
			return text("created " + rel), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "move_file", Description: "Move or rename a file or directory"},
		func(_ context.Context, _ *mcp.CallToolRequest, in moveIn) (*mcp.CallToolResult, any, error) {
			src, err := f.rel(in.Source)
			if err != nil {
				return nil, nil, err
			}
			dst, err := f.rel(in.Destination)
			if err != nil {
				return nil, nil, err
			}
			if _, err := f.root.Lstat(dst); err == nil {
				return nil, nil, fmt.Errorf("%s exists", dst)
			}
			if err := f.root.Rename(src, dst); err != nil {
				return nil, nil, f.clean(err)
			}
			return text("moved " + src + " to " + dst), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "get_file_info", Description: "Size, kind, permissions and modification time of a path"},
		func(_ context.Context, _ *mcp.CallToolRequest, in pathIn) (*mcp.CallToolResult, any, error) {
			rel, err := f.rel(in.Path)
			if err != nil {
				return nil, nil, err
			}
			fi, err := f.root.Stat(rel)
			if err != nil {
				return nil, nil, f.clean(err)
			}
			kind := "file"
			if fi.IsDir() {
				kind = "directory"
			}
			return text(fmt.Sprintf("path: %s\ntype: %s\nsize: %d\npermissions: %s\nmodified: %s",
				rel, kind, fi.Size(), fi.Mode().Perm(), fi.ModTime().UTC().Format(time.RFC3339))), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "list_allowed_directories", Description: "The directory this server may touch"},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return text(abs), nil, nil
		})
	return s, root.Close, nil
}

// rel turns a tool's path into one relative to the allowed directory, or
// refuses it.
func (f *fsys) rel(p string) (string, error) {
	if strings.ContainsRune(p, 0) {
		return "", errors.New("the path contains a NUL byte")
	}
	if p == "" {
		p = "."
	}
	if filepath.IsAbs(p) {
		r, err := filepath.Rel(f.dir, filepath.Clean(p))
		if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
			return "", fmt.Errorf("%s is outside the allowed directory %s", p, f.dir)
		}
		p = r
	}
	p = filepath.Clean(p)
	if p == ".." || strings.HasPrefix(p, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%s is outside the allowed directory %s", p, f.dir)
	}
	if slices.ContainsFunc(strings.Split(p, string(filepath.Separator)), private) {
		return "", fmt.Errorf("%s is in %s, mew's private state (tokens, logs): never served", p, privateDir)
	}
	return p, nil
}

// privateDir is the directory of a space's private state: its participants'
// tokens, run state and logs. Served, it would hand every token to whoever may
// read files, who could then act as any participant, the human included.
const privateDir = ".mew"

// private reports whether a path component names the private directory (in
// any casing, for case-insensitive file systems).
func private(name string) bool { return strings.EqualFold(name, privateDir) }

// clean rewrites an error of os.Root to speak of relative paths, in words
// for the person who reads the tool's answer: the system call's name
// ("statat", "openat") means nothing to them.
func (f *fsys) clean(err error) error {
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		return err
	}
	switch msg := pe.Err.Error(); {
	case strings.Contains(msg, "escapes"):
		return fmt.Errorf("%s: outside the allowed directory", pe.Path)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("no such file or directory: %s", pe.Path)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("permission denied: %s", pe.Path)
	case errors.Is(err, fs.ErrExist):
		return fmt.Errorf("%s already exists", pe.Path)
	default:
		return fmt.Errorf("%s: %s", pe.Path, msg)
	}
}

func (f *fsys) read(p string) (*mcp.CallToolResult, any, error) {
	rel, err := f.rel(p)
	if err != nil {
		return nil, nil, err
	}
	file, err := f.openRegular(rel, os.O_RDONLY, false)
	if err != nil {
		return nil, nil, err
	}
	defer file.Close()
	data, err := io.ReadAll(io.LimitReader(file, maxRead+1))
	if err != nil {
		return nil, nil, f.clean(err)
	}
	if len(data) > maxRead {
		return nil, nil, fmt.Errorf("%s is larger than %d bytes", rel, maxRead)
	}
	return text(string(data)), nil, nil
}

// errNotRegular is the refusal of a path that is neither a regular file
// nor a directory: a FIFO would block the server until someone wrote to
// it, and devices and sockets are not files to read or replace.
var errNotRegular = errors.New("not a regular file")

// checkKind refuses anything but a regular file or a directory.
func checkKind(rel string, mode fs.FileMode) error {
	switch {
	case mode.IsRegular(), mode.IsDir():
		return nil
	case mode&fs.ModeNamedPipe != 0:
		return fmt.Errorf("%s is a FIFO (named pipe): %w", rel, errNotRegular)
	case mode&fs.ModeSocket != 0:
		return fmt.Errorf("%s is a socket: %w", rel, errNotRegular)
	case mode&fs.ModeDevice != 0:
		return fmt.Errorf("%s is a device: %w", rel, errNotRegular)
	}
	return fmt.Errorf("%s (%s): %w", rel, mode.Type(), errNotRegular)
}

// openRegular opens rel, which must be a regular file (or, when create is
// set, not exist yet). It checks the path before opening, then opens
// without blocking (O_NONBLOCK) and checks the opened file, so that a FIFO
// swapped in between the two cannot hang the server.
func (f *fsys) openRegular(rel string, flag int, create bool) (*os.File, error) {
	fi, err := f.root.Stat(rel)
	switch {
	case err == nil:
		if err := checkKind(rel, fi.Mode()); err != nil {
			return nil, err
		}
		if fi.IsDir() {
			return nil, fmt.Errorf("%s is a directory", rel)
		}
	case create && errors.Is(err, fs.ErrNotExist):
		flag |= os.O_CREATE
	default:
		return nil, f.clean(err)
	}
	file, err := f.root.OpenFile(rel, flag|syscall.O_NONBLOCK, 0o644)
	if err != nil {
		return nil, f.clean(err)
	}
	fi, err = file.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = checkKind(rel, fi.Mode())
		if err == nil {
			err = fmt.Errorf("%s is a directory", rel)
		}
	}
	if err != nil {
		_ = file.Close()
		return nil, f.clean(err)
	}
	return file, nil
}

// openDir resolves p and opens it, which must be a directory, as
// openRegular opens a file: checked before, opened without blocking,
// checked after. It returns p relative to the root.
func (f *fsys) openDir(p string) (string, *os.File, error) {
	rel, err := f.rel(p)
	if err != nil {
		return "", nil, err
	}
	fi, err := f.root.Stat(rel)
	if err != nil {
		return "", nil, f.clean(err)
	}
	if err := checkKind(rel, fi.Mode()); err != nil {
		return "", nil, err
	}
	if !fi.IsDir() {
		return "", nil, fmt.Errorf("%s is not a directory", rel)
	}
	dir, err := f.root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", nil, f.clean(err)
	}
	if fi, err = dir.Stat(); err != nil || !fi.IsDir() {
		_ = dir.Close()
		if err == nil {
			err = fmt.Errorf("%s is not a directory", rel)
		}
		return "", nil, f.clean(err)
	}
	return rel, dir, nil
}

func (f *fsys) write(p, content string) (*mcp.CallToolResult, any, error) {
	rel, err := f.rel(p)
	if err != nil {
		return nil, nil, err
	}
	if rel == "." {
		return nil, nil, errors.New("write_file needs a file name")
	}
	if dir := filepath.Dir(rel); dir != "." {
		if err := f.root.MkdirAll(dir, 0o755); err != nil {
			return nil, nil, f.clean(err)
		}
	}
	// Not Root.WriteFile: it opens with O_TRUNC before anything can be
	// checked, and blocks on a FIFO.
	file, err := f.openRegular(rel, os.O_WRONLY, true)
	if err != nil {
		return nil, nil, err
	}
	_, err = file.WriteString(content)
	if err == nil {
		err = file.Truncate(int64(len(content)))
	}
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, nil, f.clean(err)
	}
	return text(fmt.Sprintf("wrote %d bytes to %s", len(content), rel)), nil, nil
}

func (f *fsys) list(p string) (*mcp.CallToolResult, any, error) {
	_, dir, err := f.openDir(p)
	if err != nil {
		return nil, nil, err
	}
	entries, err := dir.ReadDir(-1)
	_ = dir.Close()
	if err != nil {
		return nil, nil, f.clean(err)
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	var b strings.Builder
	entries = slices.DeleteFunc(entries, func(e fs.DirEntry) bool { return private(e.Name()) })
	for i, e := range entries {
		if i == maxListing {
			fmt.Fprintf(&b, "… and %d more\n", len(entries)-i)
			break
		}
		tag := "[FILE]"
		if e.IsDir() {
			tag = "[DIR]"
		}
		b.WriteString(tag + " " + e.Name() + "\n")
	}
	if len(entries) == 0 {
		b.WriteString("(empty)\n")
	}
	return text(strings.TrimRight(b.String(), "\n")), nil, nil
}

// walk lists the paths under p whose base name satisfies keep.
func (f *fsys) walk(p string, keep func(name string) bool) (*mcp.CallToolResult, any, error) {
	// WalkDir opens only what the listing says is a directory; the start
	// is checked here, since opening a FIFO would block.
	rel, dir, err := f.openDir(p)
	if err != nil {
		return nil, nil, err
	}
	_ = dir.Close()
	var found []string
	start := filepath.ToSlash(rel)
	err = fs.WalkDir(f.root.FS(), start, func(q string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if q == start {
			return nil
		}
		if private(d.Name()) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if strings.Count(strings.TrimPrefix(q, start), "/") > maxTreeDepth {
			return fs.SkipDir
		}
		if keep(d.Name()) {
			name := q
			if d.IsDir() {
				name += "/"
			}
			found = append(found, name)
		}
		if len(found) >= maxListing {
			return fs.SkipAll
		}
		return nil
	})
	if err != nil {
		return nil, nil, f.clean(err)
	}
	slices.Sort(found)
	if len(found) == 0 {
		return text("(nothing)"), nil, nil
	}
	return text(strings.Join(found, "\n")), nil, nil
}
