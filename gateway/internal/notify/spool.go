package notify

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"
)

// Spool operations.
const (
	opAdd  = "add"
	opTry  = "try"
	opDone = "done"
)

// spoolLine is one line of the spool.
type spoolLine struct {
	Op       string   `json:"op"`
	ID       string   `json:"id,omitempty"`       // try, done
	Attempts int      `json:"attempts,omitempty"` // try: attempts made so far
	Message  *Message `json:"message,omitempty"`  // add
}

// deadLine is one line of the dead-letter log.
type deadLine struct {
	Time      string          `json:"time"`
	ID        string          `json:"id"`
	Recipient string          `json:"recipient"`
	Subject   string          `json:"subject"`
	Attempts  int             `json:"attempts"`
	Error     string          `json:"error"`
	Body      json.RawMessage `json:"body"`
}

// load reads the spool back: the messages added and not done, with the
// attempts they had, due now (a restart is as good a time as any to try
// again). A line that does not parse is skipped and logged; past
// QueueSize, the oldest are kept and the rest dead-lettered. The spool is
// then rewritten with what is pending.
func (n *Notifier) load() error {
	f, err := os.Open(n.spoolPath())
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return n.rewrite()
	case err != nil:
		return fmt.Errorf("notify: spool: %w", err)
	}
	byID := map[string]*entry{}
	var order []*entry
	rd := bufio.NewReaderSize(f, 64<<10)
	bad := 0
	for {
		line, long, err := readLine(rd, maxSpoolLine)
		if len(line) > 0 || long {
			if long || !n.replay(line, byID, &order) {
				bad++
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				n.log.Warn("webhook spool: read stopped", "path", n.spoolPath(), "err", err)
			}
			break
		}
	}
	_ = f.Close()
	if bad > 0 {
		n.log.Warn("webhook spool: lines skipped", "path", n.spoolPath(), "lines", bad)
	}
	now := n.cfg.Now()
	for _, e := range order {
		switch {
		case e.msg == nil:
		case e.attempts >= n.cfg.MaxAttempts:
			n.deadLetter(e.msg, e.attempts, "its attempts were used up before a restart")
		case len(n.entries) >= n.cfg.QueueSize:
			n.refusedN.Add(1)
			n.deadLetter(e.msg, e.attempts, fmt.Sprintf("the queue is full (%d pending)", n.cfg.QueueSize))
		default:
			e.next = now
			n.entries = append(n.entries, e)
		}
	}
	n.pending.Store(int64(len(n.entries)))
	if len(n.entries) > 0 {
		n.log.Info("webhook notifications pending from before", "count", len(n.entries))
	}
	return n.rewrite()
}

// replay applies one line of the spool; false when it is not one the
// notifier writes.
func (n *Notifier) replay(line []byte, byID map[string]*entry, order *[]*entry) bool {
	var l spoolLine
	if err := json.Unmarshal(line, &l); err != nil {
		return false
	}
	switch l.Op {
	case opAdd:
		if l.Message == nil || l.Message.ID == "" || byID[l.Message.ID] != nil || len(l.Message.Body) > MaxBody {
			return false
		}
		e := &entry{msg: l.Message}
		byID[l.Message.ID] = e
		*order = append(*order, e)
	case opTry:
		if e := byID[l.ID]; e != nil && l.Attempts > e.attempts {
			e.attempts = l.Attempts
		}
	case opDone:
		if e := byID[l.ID]; e != nil {
			delete(byID, l.ID)
			e.msg = nil
		}
	default:
		return false
	}
	return true
}

// readLine reads one line of at most limit bytes, without its newline; a
// longer one is read to its end and dropped (long).
func readLine(rd *bufio.Reader, limit int) (line []byte, long bool, err error) {
	for {
		chunk, err := rd.ReadSlice('\n')
		if !long {
			if len(line)+len(chunk) > limit+1 {
				long, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimSuffix(line, []byte("\n")), long, err
	}
}

// rewrite replaces the spool with the pending entries (a new file renamed
// over the old one) and opens it for appending.
func (n *Notifier) rewrite() error {
	if n.spool != nil {
		_ = n.spool.Close()
		n.spool = nil
	}
	tmp := n.spoolPath() + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("notify: spool: %w", err)
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for _, e := range n.entries {
		_ = enc.Encode(spoolLine{Op: opAdd, Message: e.msg})
		if e.attempts > 0 {
			_ = enc.Encode(spoolLine{Op: opTry, ID: e.msg.ID, Attempts: e.attempts})
		}
	}
	err = w.Flush()
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, n.spoolPath())
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("notify: spool: %w", err)
	}
	n.spool, err = os.OpenFile(n.spoolPath(), os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("notify: spool: %w", err)
	}
	n.lines = len(n.entries)
	return nil
}

// appendSpool writes lines to the spool and syncs it: a message is on disk
// before its first attempt. A failure is logged; delivery goes on, from
// memory.
func (n *Notifier) appendSpool(lines ...any) {
	if n.spool == nil {
		return
	}
	var buf []byte
	for _, l := range lines {
		b, err := json.Marshal(l)
		if err != nil {
			continue
		}
		buf = append(append(buf, b...), '\n')
	}
	_, err := n.spool.Write(buf)
	if err == nil {
		err = n.spool.Sync()
	}
	if err != nil {
		n.log.Warn("webhook spool write failed", "path", n.spoolPath(), "err", err)
		return
	}
	n.lines += len(lines)
}

// compact rewrites the spool once it holds mostly finished messages.
func (n *Notifier) compact() {
	if n.lines < 4*len(n.entries)+64 && len(n.entries) > 0 {
		return
	}
	if err := n.rewrite(); err != nil {
		n.log.Warn("webhook spool compaction failed", "err", err)
	}
}

// deadLetter appends a message given up on to the dead-letter log.
func (n *Notifier) deadLetter(m *Message, attempts int, why string) {
	n.dead.Add(1)
	path := n.deadPath()
	if fi, err := os.Stat(path); err == nil && fi.Size() > maxDeadFile {
		if err := os.Rename(path, path+".1"); err != nil {
			n.log.Warn("webhook dead-letter log rotation failed", "err", err)
		}
	}
	b, err := json.Marshal(deadLine{
		Time: n.cfg.Now().UTC().Format(time.RFC3339Nano), ID: m.ID, Recipient: m.Recipient, Subject: m.Subject,
		Attempts: attempts, Error: why, Body: m.Body,
	})
	if err != nil {
		// A body that is not JSON (Enqueue takes what it is given).
		b, _ = json.Marshal(deadLine{Time: n.cfg.Now().UTC().Format(time.RFC3339Nano), ID: m.ID, Recipient: m.Recipient, Subject: m.Subject, Attempts: attempts, Error: why})
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err == nil {
		_, err = f.Write(append(b, '\n'))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		n.log.Error("webhook dead-letter log write failed: a notification is lost", "id", m.ID, "err", err)
	}
}
