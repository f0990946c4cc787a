package space

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mew-protocol/mew/protocol"
)

// ErrInvalidParticipantID is wrapped by the errors of [ValidParticipantID].
var ErrInvalidParticipantID = errors.New("invalid participant id")

// MaxParticipantIDLen is the longest participant id, in bytes.
const MaxParticipantIDLen = 256

// ValidParticipantID reports whether id may name a participant: in a
// configuration, in an invitation, and as the base of its token file's name.
// A valid id is 1 to 256 bytes of UTF-8 without '/', '\\', NUL or other
// control characters, is not "." or "..", does not contain "..", and is not
// reserved for the gateway ([protocol.IsReservedID]: "gateway" and
// "system:..."). The error wraps [ErrInvalidParticipantID] and does not
// repeat the id.
func ValidParticipantID(id string) error {
	if problem := idProblem(id); problem != "" {
		return fmt.Errorf("%w: %s", ErrInvalidParticipantID, problem)
	}
	if protocol.IsReservedID(id) {
		return fmt.Errorf("%w: reserved for the gateway", ErrInvalidParticipantID)
	}
	return nil
}

// idProblem says what is wrong with id as a participant or space id, or ""
// when nothing is.
func idProblem(id string) string {
	switch {
	case id == "":
		return "empty"
	case len(id) > MaxParticipantIDLen:
		return fmt.Sprintf("longer than %d bytes", MaxParticipantIDLen)
	case !utf8.ValidString(id):
		return "not valid UTF-8"
	case id == "." || id == "..":
		return fmt.Sprintf("%q is not a name", id)
	case strings.Contains(id, ".."):
		return `contains ".."`
	}
	for _, r := range id {
		switch {
		case r == '/' || r == '\\':
			return fmt.Sprintf("contains %q", r)
		case unicode.IsControl(r):
			return "contains a control character"
		}
	}
	return ""
}
