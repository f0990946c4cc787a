package lineclient

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

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

// lineScreen draws on a terminal: output scrolls up above a bottom region
// made of the status line (when there is one) and the prompt with the line
// being typed (when input is edited here). Writing output erases the
// region, writes, and draws the region again, so nothing breaks into the
// line being typed. Everything it writes besides its own escape sequences
// is cleaned by its callers or typed by the user (the editor keeps only
// printable runes).
type lineScreen struct {
	mu     sync.Mutex
	out    io.Writer
	width  func() int
	prompt string
	ed     *lineEditor // nil when the input is not edited here

	st        string // the status line, "" for none
	drawn     bool   // the region is on the screen
	statusRow bool   // the drawn region has a status row above the cursor's row
}

// newLineScreen draws on out, a terminal; ed is nil when stdin is not one.
func newLineScreen(out *os.File, ed *lineEditor) *lineScreen {
	return &lineScreen{
		out: out, ed: ed, prompt: "> ",
		width: func() int {
			w, err := 0, error(nil)
			if cerr := withFd(out, func(fd int) { w, _, err = term.GetSize(fd) }); cerr != nil {
				err = cerr
			}
			if err != nil || w < 10 {
				return 80
			}
			return w
		},
	}
}

// erase removes the region from the screen, leaving the cursor at the start
// of its first row.
func (s *lineScreen) erase(b *strings.Builder) {
	if !s.drawn {
		return
	}
	b.WriteString("\r")
	if s.statusRow {
		b.WriteString("\x1b[1A")
	}
	b.WriteString("\x1b[J")
	s.drawn, s.statusRow = false, false
}

// draw puts the region on the screen at the cursor, the start of a row.
func (s *lineScreen) draw(b *strings.Builder) {
	if s.st == "" && s.ed == nil {
		return
	}
	w := s.width()
	if s.st != "" {
		b.WriteString("\x1b[2m" + fitWidth(s.st, w-1) + "\x1b[0m")
		if s.ed == nil {
			b.WriteString("\r")
			s.drawn = true
			return
		}
		b.WriteString("\r\n")
		s.statusRow = true
	}
	if s.ed != nil {
		text, col := s.ed.view(s.prompt, w)
		b.WriteString(text + "\x1b[K\r")
		if col > 0 {
			fmt.Fprintf(b, "\x1b[%dC", col)
		}
	}
	s.drawn = true
}

// write sends b to the terminal.
func (s *lineScreen) write(b *strings.Builder) {
	_, _ = io.WriteString(s.out, b.String())
}

// println writes a line of output above the region.
func (s *lineScreen) println(line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	s.erase(&b)
	b.WriteString(strings.ReplaceAll(line, "\n", "\r\n") + "\r\n")
	s.draw(&b)
	s.write(&b)
}

// status replaces the status line; "" removes it.
func (s *lineScreen) status(st string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st == s.st {
		return
	}
	var b strings.Builder
	s.erase(&b)
	s.st = st
	s.draw(&b)
	s.write(&b)
}

// keys feeds typed bytes to the editor and redraws. It returns the lines
// entered, each left on the screen after the prompt, and editEOF or
// editInterrupt when one of those keys came (the bytes after it are
// dropped).
func (s *lineScreen) keys(p []byte) ([]string, editEvent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	var lines []string
	ev := editNone
	for _, c := range p {
		line, e := s.ed.feed(c)
		switch e {
		case editLine:
			s.erase(&b)
			b.WriteString(s.prompt + line + "\r\n")
			lines = append(lines, line)
			continue
		case editEOF, editInterrupt:
			ev = e
		}
		if ev != editNone {
			break
		}
	}
	s.erase(&b)
	s.draw(&b)
	s.write(&b)
	return lines, ev
}

// close removes the region, leaving the cursor at the start of a row.
func (s *lineScreen) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	s.erase(&b)
	s.st = ""
	s.write(&b)
}

// fitWidth cuts s to at most w columns, marking the cut.
func fitWidth(s string, w int) string {
	if runeWidth(s) <= w {
		return s
	}
	rs := []rune(s)
	for len(rs) > 0 && widthOf(rs)+1 > w {
		rs = rs[:len(rs)-1]
	}
	return string(rs) + "…"
}

// readTerminal runs the readable mode on a terminal: the terminal is put
// in raw mode and each line is edited on the screen until /quit, Ctrl-D
// on an empty line, Ctrl-C, or ctx ends. The terminal is restored at the
// end.
func (lc *lineClient) readTerminal(ctx context.Context, in *os.File, scr *lineScreen) error {
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
	scr.mu.Lock()
	var b strings.Builder
	scr.erase(&b) // drawn already under the first output
	scr.draw(&b)
	scr.write(&b)
	scr.mu.Unlock()
	chunks, errc := readChunks(in)
	defer stopReading(in, chunks)
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-lc.fatal:
			return err
		case p, ok := <-chunks:
			if !ok {
				if err := <-errc; err != io.EOF {
					return fmt.Errorf("client connect: %w", err)
				}
				return nil
			}
			lines, ev := scr.keys(p)
			for _, line := range lines {
				if lc.input(ctx, strings.TrimSpace(line)) {
					return nil
				}
			}
			if ev == editEOF || ev == editInterrupt {
				return nil
			}
		}
	}
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
