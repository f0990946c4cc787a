package lineclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
	"golang.org/x/term"
)

// display is where the line client writes. Lines are final output; the
// status is a transient line kept under the output, replaced in place,
// which only a terminal shows.
type display interface {
	println(line string)
	status(s string)
}

// plainDisplay writes lines to a pipe, a file or a test's buffer; it has no
// status line.
type plainDisplay struct {
	mu  sync.Mutex
	out io.Writer
}

func (d *plainDisplay) println(line string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	fmt.Fprintf(d.out, "%s\n", line)
}

func (d *plainDisplay) status(string) {}

// IsTerminal reports whether f is a terminal (and so an *os.File).
func IsTerminal(f any) (*os.File, bool) {
	file, ok := f.(*os.File)
	if !ok {
		return nil, false
	}
	var tty bool
	if withFd(file, func(fd int) { tty = term.IsTerminal(fd) }) != nil || !tty {
		return nil, false
	}
	return file, true
}

// withFd runs fn on f's descriptor. Unlike f.Fd it leaves the descriptor in
// the mode it is in: Fd puts it in blocking mode for good, and a blocked
// read of such a file then survives its Close and any read deadline, so
// the goroutine reading the terminal could not be stopped.
func withFd(f *os.File, fn func(fd int)) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	return rc.Control(func(fd uintptr) { fn(int(fd)) })
}

// widthOf returns f's terminal width, 80 when it cannot tell.
func widthOf(f *os.File) int {
	w, err := 0, error(nil)
	if cerr := withFd(f, func(fd int) { w, _, err = term.GetSize(fd) }); cerr != nil {
		err = cerr
	}
	if err != nil || w < 20 {
		return 80
	}
	return w
}

// statusScreen is the terminal's output when the input is not typed on it
// (a pipe into an interactive terminal): lines, and the status under
// them, replaced in place.
type statusScreen struct {
	mu    sync.Mutex
	out   io.Writer
	width func() int
	st    string // the status on the screen, "" for none
}

// erase removes the status line, leaving the cursor at the start of its
// row.
func (s *statusScreen) erase(b *strings.Builder) {
	if s.st != "" {
		b.WriteString("\r\x1b[J")
	}
}

func (s *statusScreen) draw(b *strings.Builder) {
	if s.st != "" {
		b.WriteString("\x1b[2m" + ansi.Truncate(s.st, s.width()-1, "…") + "\x1b[0m\r")
	}
}

func (s *statusScreen) println(line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	s.erase(&b)
	b.WriteString(strings.ReplaceAll(line, "\n", "\r\n") + "\r\n")
	s.draw(&b)
	_, _ = io.WriteString(s.out, b.String())
}

func (s *statusScreen) status(st string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st == s.st {
		return
	}
	var b strings.Builder
	s.erase(&b)
	s.st = st
	s.draw(&b)
	_, _ = io.WriteString(s.out, b.String())
}

// close removes the status, leaving the cursor at the start of a row.
func (s *statusScreen) close() { s.status("") }

// termScreen is a terminal the user types on: x/term's Terminal edits the
// line (cursor keys, Ctrl-A/E/K/U/W, history) and writes output above the
// prompt without breaking into the line being typed. The status line is
// the prompt's first row: the prompt is the status padded to the
// terminal's width, then "> ", and the Terminal, which wraps the prompt as
// it wraps a long line, keeps both rows in place.
type termScreen struct {
	t     *term.Terminal
	keys  *keyFilter
	width func() int

	mu sync.Mutex // guards st and w, and orders the prompt's changes
	st string
	w  int
}

// newTermScreen edits lines typed on the terminal (readTerminal reads it)
// and writes to out.
func newTermScreen(out io.Writer, width func() int) *termScreen {
	keys := &keyFilter{done: make(chan struct{})}
	s := &termScreen{t: term.NewTerminal(struct {
		io.Reader
		io.Writer
	}{keys, out}, "> "), keys: keys, width: width}
	s.t.History = &history{}
	s.w = width()
	_ = s.t.SetSize(s.w, 24) // the height is not used for editing
	return s
}

func (s *termScreen) println(line string) {
	s.fit()
	_, _ = s.t.Write([]byte(line + "\n"))
}

func (s *termScreen) status(st string) {
	s.mu.Lock()
	if st == s.st {
		s.mu.Unlock()
		return
	}
	s.st = st
	s.mu.Unlock()
	s.fit()
	_, _ = s.t.Write(nil) // draws the prompt again, when it is on the screen
}

// fit follows the terminal's width and sets the prompt for the status.
func (s *termScreen) fit() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w := s.width(); w != s.w {
		s.w = w
		_ = s.t.SetSize(w, 24)
	}
	s.t.SetPrompt(promptFor(s.st, s.w))
}

// promptFor is the prompt under a status: the status, dim, padded to w
// columns, so that "> " starts the next row. The Terminal counts a rune as
// a column, so the status keeps only runes one column wide, and its
// styling ends within the row's first w runes.
func promptFor(st string, w int) string {
	if st == "" {
		return "> "
	}
	rs := []rune(st)
	for i, r := range rs {
		if ansi.StringWidth(string(r)) != 1 {
			rs[i] = '?'
		}
	}
	if len(rs) > w-9 {
		rs = append(rs[:max(w-10, 0)], '…')
	}
	return "\x1b[2m" + string(rs) + "\x1b[0m" + strings.Repeat(" ", w-len(rs)) + "> "
}

// close leaves the screen at the start of an empty row.
func (s *termScreen) close() {
	s.mu.Lock()
	s.st = ""
	s.mu.Unlock()
	s.fit()
	_, _ = s.t.Write(nil)
}

// maxHistory bounds the lines the history remembers.
const maxHistory = 500

// history is the lines entered, for Up and Down: a blank line or a repeat
// of the latest is not kept. It implements term.History; the Terminal
// calls it from ReadLine's goroutine only.
type history struct{ lines []string }

func (h *history) Add(line string) {
	if strings.TrimSpace(line) == "" || (len(h.lines) > 0 && h.lines[len(h.lines)-1] == line) {
		return
	}
	h.lines = append(h.lines, line)
	if len(h.lines) > maxHistory {
		h.lines = h.lines[len(h.lines)-maxHistory:]
	}
}

func (h *history) Len() int { return len(h.lines) }

// At returns the idx-th latest line, 0 the latest.
func (h *history) At(idx int) string { return h.lines[len(h.lines)-1-idx] }

// keyAliases are the keys terminals send that the Terminal does not know,
// as the ones it knows: application-mode cursor keys, VT Home and End,
// Ctrl with an arrow (a word, as Alt).
var keyAliases = strings.NewReplacer(
	"\x1bOA", "\x1b[A", "\x1bOB", "\x1b[B", "\x1bOC", "\x1b[C", "\x1bOD", "\x1b[D",
	"\x1bOH", "\x1b[H", "\x1bOF", "\x1b[F", "\x1b[1~", "\x1b[H", "\x1b[4~", "\x1b[F",
	"\x1b[1;5C", "\x1b[1;3C", "\x1b[1;5D", "\x1b[1;3D",
)

// keyFilter is what the Terminal reads: the terminal's input with keys
// aliased, a tab typed as a space, and format characters (bidi overrides,
// zero-width joiners) and C1 controls dropped, so that a line sent holds
// only what the user saw. Its reads end with io.EOF once done is closed.
type keyFilter struct {
	chunks <-chan []byte
	done   chan struct{} // closed by readTerminal at its end
	part   []byte        // the first bytes of a rune the last chunk cut
	buf    []byte        // filtered, not read yet
}

func (f *keyFilter) Read(p []byte) (int, error) {
	for len(f.buf) == 0 {
		select {
		case <-f.done:
			return 0, io.EOF
		case c, ok := <-f.chunks:
			if !ok {
				return 0, io.EOF
			}
			f.buf = f.filter(c)
		}
	}
	n := copy(p, f.buf)
	f.buf = f.buf[n:]
	return n, nil
}

// filter cleans one chunk of input.
func (f *keyFilter) filter(c []byte) []byte {
	in := append(f.part, c...)
	f.part = nil
	if i := lastRuneStart(in); i >= 0 && !utf8.FullRune(in[i:]) {
		in, f.part = in[:i], bytes.Clone(in[i:])
	}
	in = []byte(keyAliases.Replace(string(in)))
	out := make([]byte, 0, len(in))
	for len(in) > 0 {
		r, n := utf8.DecodeRune(in)
		switch {
		case r == '\t':
			out = append(out, ' ')
		case r >= 0x80 && (r <= 0x9f || unicode.Is(unicode.Cf, r)):
		default:
			out = append(out, in[:n]...)
		}
		in = in[n:]
	}
	return out
}

// lastRuneStart is the index of the last rune's first byte, -1 for none.
func lastRuneStart(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			return i
		}
	}
	return -1
}

// readTerminal runs the readable mode on a terminal: the terminal is put
// in raw mode and each line is edited on the screen until /quit, Ctrl-D
// on an empty line, Ctrl-C, or ctx ends. The terminal is restored at the
// end.
func (lc *lineClient) readTerminal(ctx context.Context, in *os.File, scr *termScreen) error {
	var old *term.State
	var err error
	if cerr := withFd(in, func(fd int) { old, err = term.MakeRaw(fd) }); cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("client connect: %w", err)
	}
	defer func() { _ = withFd(in, func(fd int) { _ = term.Restore(fd, old) }) }()
	defer scr.close()
	chunks, _ := readChunks(in) // a read error ends the input, as its end does
	defer stopReading(in, chunks)
	// The Terminal reads on its own goroutine, which ends when done is
	// closed: its reads end then.
	done := scr.keys.done
	scr.keys.chunks = chunks // before the goroutine that reads it starts
	lines := make(chan string)
	ended := make(chan error, 1) // why the lines ended; read back once taken
	go func() {
		defer close(lines)
		for {
			line, err := scr.t.ReadLine()
			if err != nil {
				ended <- err
				return
			}
			select {
			case lines <- line:
			case <-done:
				ended <- io.EOF
				return
			}
		}
	}()
	defer func() {
		close(done)
		for range lines { // the goroutine above has ended once lines is closed
		}
	}()
	return lc.serve(ctx, lines, func() error {
		if err := <-ended; !errors.Is(err, io.EOF) {
			return fmt.Errorf("client connect: %w", err)
		}
		return nil // Ctrl-D on an empty line, Ctrl-C
	})
}

// readChunks reads in on a goroutine, delivering what each read returns
// until one fails; its error then goes to the second channel and the first
// is closed. stopReading ends it.
func readChunks(in *os.File) (<-chan []byte, <-chan error) {
	chunks := make(chan []byte)
	errc := make(chan error, 1)
	go func() {
		defer close(chunks)
		buf := make([]byte, 4096)
		for {
			n, err := in.Read(buf)
			if n > 0 {
				chunks <- append([]byte(nil), buf[:n]...)
			}
			if err != nil {
				errc <- err
				return
			}
		}
	}()
	return chunks, errc
}

// stopReading ends readChunks' goroutine and waits for it, so that nothing
// reads the terminal once the client is done with it. A read deadline
// interrupts a read of a terminal the runtime polls (one opened by a
// program, as tests and embedders do). A process's own standard input is
// most often in blocking mode, which no deadline reaches: its reader is
// left blocked and ends when the process does, moments later.
func stopReading(in *os.File, chunks <-chan []byte) {
	if in.SetReadDeadline(time.Now()) != nil {
		go func() { // the reader must not block on a send for ever
			for range chunks {
			}
		}()
		return
	}
	for range chunks {
	}
	_ = in.SetReadDeadline(time.Time{})
}
