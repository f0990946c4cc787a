package protocol

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
)

var idFallback atomic.Uint64

// NewID returns a new envelope id: a UUIDv7, whose time-ordered prefix keeps
// logs and stores sorted by creation. It never fails: if the random source
// does, it falls back to a random UUIDv4, then to a time-and-counter id.
func NewID() string {
	if u, err := uuid.NewV7(); err == nil {
		return u.String()
	}
	if u, err := uuid.NewRandom(); err == nil {
		return u.String()
	}
	return "id-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-" + strconv.FormatUint(idFallback.Add(1), 36)
}
