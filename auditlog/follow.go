package auditlog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// Follower keeps an [Index] of a log directory current while a gateway
// appends to it. Each [Follower.Update] reads only the lines written since
// the one before: the logs are append-only, and a file rotated away is
// read on from where its reading stopped, under its new name. Only when
// that cannot give what a fresh read would (a rotated file deleted, a file
// cut short or replaced) does it read everything again. Its index answers
// as [BuildIndex] over the same files would.
//
// A Follower is not safe for concurrent use, and neither is the index it
// returns while an Update runs: its user serialises them.
type Follower struct {
	dir  string
	opts IndexOptions
	ix   *Index
	env  tail
	dec  tail
	// checks holds the capability checks read, by envelope id, in the
	// order written: an envelope read after its checks (the two files are
	// flushed apart) gets them then, as a full read would give them.
	checks map[string][]*Record
	// full is set when the bodies outgrew the budget, with the rotated
	// files of the envelope history then: it stays so until one of them is
	// deleted (reading on cannot shrink the bodies).
	full   error
	fullAt []string
}

// tail is how far a Follower has read one log.
type tail struct {
	name   string   // EnvelopeHistory or CapabilityDecisions
	done   []string // the files read to their end: rotated ones, in order
	cur    string   // the current file, "" until it has been read
	info   os.FileInfo
	pos    filePos // where its reading stopped
	bodies *bodyWindow
	stats  ScanStats
}

// NewFollower returns a Follower of the logs in dir; nothing is read until
// its first Update.
func NewFollower(dir string, opts IndexOptions) *Follower {
	f := &Follower{dir: dir, opts: opts}
	f.reset()
	return f
}

// reset forgets everything read.
func (f *Follower) reset() {
	f.ix = newIndex(f.opts)
	f.env = tail{name: EnvelopeHistory, bodies: newBodyWindow(f.opts.MaxBodies)}
	f.dec = tail{name: CapabilityDecisions, bodies: newBodyWindow(f.opts.MaxBodies)}
	f.checks = map[string][]*Record{}
	f.full = nil
}

// maxRereads bounds the reads of one Update when the files keep rotating
// under it.
const maxRereads = 3

// Update reads what the logs gained since the last Update and returns the
// index. The index's Envelopes and Decisions stats count everything read
// since the Follower last started over. Once the bodies outgrow
// IndexOptions.MaxBytes it returns ErrTooLarge, without reading, until a
// rotated file is deleted.
func (f *Follower) Update(ctx context.Context) (*Index, error) {
	for range maxRereads {
		envFiles, err := Files(f.dir, EnvelopeHistory)
		if err != nil {
			return nil, err
		}
		decFiles, err := Files(f.dir, CapabilityDecisions)
		if err != nil {
			return nil, err
		}
		if f.full != nil {
			if hasPrefix(envFiles, f.fullAt) {
				return nil, f.full
			}
			f.reset()
		}
		if !f.env.continues(envFiles) || !f.dec.continues(decFiles) {
			f.reset()
		}
		switch err := f.read(ctx, envFiles, decFiles); {
		case errors.Is(err, errReplaced):
			f.reset() // a file renamed between its listing and its reading
			continue
		case errors.Is(err, ErrTooLarge):
			f.reset()
			f.full, f.fullAt = err, rotated(envFiles)
			return nil, err
		case err != nil && ctx.Err() != nil:
			return nil, err // taken up where it stopped next time
		case err != nil:
			f.reset()
			return nil, err
		}
		// A rotation while reading may have hidden a file's last lines:
		// when the files are not the ones read, read on.
		if f.env.settled(f.dir) && f.dec.settled(f.dir) {
			break
		}
	}
	f.ix.Envelopes, f.ix.Decisions = f.env.summary(), f.dec.summary()
	return f.ix, nil
}

// hasPrefix reports whether files begins with prefix.
func hasPrefix(files, prefix []string) bool {
	return len(files) >= len(prefix) && slices.Equal(files[:len(prefix)], prefix)
}

// rotated returns the rotated files of a list of Files: all but the
// current one.
func rotated(files []string) []string {
	if n := len(files); n > 0 && !isRotatedName(files[n-1]) {
		return files[:n-1]
	}
	return files
}

// isRotatedName reports whether path is not a log's current file.
func isRotatedName(path string) bool {
	b := filepath.Base(path)
	return b != EnvelopeHistory && b != CapabilityDecisions
}

// summary is what t read, as a Scan of the same files would count it.
func (t *tail) summary() ScanStats {
	st := t.stats
	st.Files = len(t.done)
	if t.cur != "" {
		st.Files++
	}
	return st
}

// read takes what the files gained, the envelopes first, as BuildIndex
// does.
func (f *Follower) read(ctx context.Context, envFiles, decFiles []string) error {
	touched := map[string]bool{}
	err := f.env.read(ctx, f.rename, envFiles, f.opts.ReadOptions, func(r *Record) error {
		e, err := f.ix.addEnvelope(r)
		if e != nil && len(f.checks[r.ID]) > 0 {
			touched[r.ID] = true
		}
		return err
	})
	// Checks read before their envelope, or before another envelope of
	// the same id, go where a full read would put them.
	for id := range touched {
		for _, e := range f.ix.byID[id] {
			e.Decisions = nil
		}
		for _, r := range f.checks[id] {
			f.ix.attach(r)
		}
	}
	if err != nil {
		return err
	}
	return f.dec.read(ctx, f.rename, decFiles, f.opts.ReadOptions, func(r *Record) error {
		if f.ix.addDecision(r) {
			f.checks[r.ID] = append(f.checks[r.ID], r)
		}
		return nil
	})
}

// continues reports whether files, the log's files as listed now, begin
// with those t read to their end, followed by the file t was reading (its
// name the same, or rotated), no shorter than t read it.
func (t *tail) continues(files []string) bool {
	if len(files) < len(t.done) || !slices.Equal(files[:len(t.done)], t.done) {
		return false
	}
	if t.cur == "" {
		return true
	}
	rest := files[len(t.done):]
	if len(rest) == 0 {
		return false
	}
	fi, err := os.Lstat(rest[0])
	return err == nil && os.SameFile(fi, t.info) && fi.Size() >= t.pos.off
}

// settled reports whether the log's files are still the ones t read: no
// rotation since.
func (t *tail) settled(dir string) bool {
	files, err := Files(dir, t.name)
	if err != nil || len(files) == 0 {
		return err == nil && t.cur == "" && len(t.done) == 0
	}
	last := files[len(files)-1]
	if t.cur == "" {
		return slices.Equal(files, t.done)
	}
	fi, err := os.Lstat(last)
	return err == nil && last == t.cur && slices.Equal(files[:len(files)-1], t.done) && os.SameFile(fi, t.info)
}

// read reads files from where t stopped: the file it was reading on from
// its position (renaming its records if it was rotated since), then the
// files after it. The current file's last line is left for later while it
// lacks its '\n'. t always says where reading stopped, so that an Update
// cut short by its context is taken up where it stopped.
func (t *tail) read(ctx context.Context, rename func(old, new string), files []string, opts ReadOptions, fn func(*Record) error) error {
	for i, path := range files[len(t.done):] {
		pos, want := filePos{}, os.FileInfo(nil)
		if i == 0 && t.cur != "" {
			pos, want = t.pos, t.info
			if path != t.cur {
				rename(t.cur, path)
				t.cur = path
			}
		}
		current := filepath.Base(path) == t.name
		fi, end, err := readFile(ctx, path, want, pos, current, opts, t.bodies, &t.stats, fn)
		if fi != nil {
			t.cur, t.info, t.pos = path, fi, end
		}
		if err != nil {
			return err
		}
		if !current {
			t.done = append(t.done, path)
			t.cur, t.info, t.pos = "", nil, filePos{}
		}
	}
	return nil
}

// errReplaced is returned when a file is no longer the one being read.
var errReplaced = errors.New("the file was replaced while it was read")

// readFile reads path from pos, when it is still the file want (nil: any).
func readFile(ctx context.Context, path string, want os.FileInfo, pos filePos, follow bool, opts ReadOptions, bodies *bodyWindow, st *ScanStats, fn func(*Record) error) (os.FileInfo, filePos, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, pos, err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, pos, err
	}
	if want != nil && !os.SameFile(fi, want) {
		return nil, pos, fmt.Errorf("%s: %w", path, errReplaced)
	}
	// On an error too, fi and the position say how far the reading went.
	end, err := scanFrom(ctx, fh, path, pos, follow, opts, bodies, st, fn)
	return fi, end, err
}

// rename gives the records of file old the name new: a full read, which
// meets them in the rotated file, names them so.
func (f *Follower) rename(old, new string) {
	set := func(r *Record) {
		if r != nil && r.File == old {
			r.File = new
		}
	}
	for _, e := range f.ix.order {
		set(e.Record)
	}
	for _, rs := range f.checks {
		for _, r := range rs {
			set(r)
		}
	}
	for _, g := range f.ix.grants {
		for _, p := range g.Patterns {
			set(p)
		}
		set(g.Expired)
	}
}
