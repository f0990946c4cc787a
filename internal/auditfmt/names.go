package auditfmt

import (
	"path/filepath"
	"strings"
	"time"
)

// The two logs of a log directory, as the reference gateway names them.
const (
	EnvelopeHistory     = "envelope-history.jsonl"
	CapabilityDecisions = "capability-decisions.jsonl"
)

// RotatedLayout is the time in a rotated file's name, between the log's
// stem and its extension: envelope-history.20261122T100950.999Z.jsonl. It
// is UTC and fixed width, so the names sort in the order the files were
// rotated, and all before the current file ('2' < 'j').
const RotatedLayout = "20060102T150405.000Z"

// splitName splits a log's file name or path at its extension.
func splitName(name string) (stem, ext string) {
	ext = filepath.Ext(name)
	return strings.TrimSuffix(name, ext), ext
}

// RotatedName is the path of the log at path rotated at t.
func RotatedName(path string, t time.Time) string {
	stem, ext := splitName(path)
	return stem + "." + t.UTC().Format(RotatedLayout) + ext
}

// RotatedTime reports whether name (a base name) is a rotated file of the
// log named logName (a base name, such as EnvelopeHistory), and the time in
// it. Names that merely look alike, such as envelope-history.old.jsonl or a
// time in another layout, are not the log's.
func RotatedTime(name, logName string) (time.Time, bool) {
	stem, ext := splitName(logName)
	mid, ok := strings.CutPrefix(name, stem+".")
	if !ok {
		return time.Time{}, false
	}
	if mid, ok = strings.CutSuffix(mid, ext); !ok {
		return time.Time{}, false
	}
	// The round trip refuses what Parse would accept loosely.
	t, err := time.Parse(RotatedLayout, mid)
	if err != nil || t.Format(RotatedLayout) != mid {
		return time.Time{}, false
	}
	return t, true
}
