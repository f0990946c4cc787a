package llm

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"
)

// FuzzSSE: the event reader ends on any body, and every event's data is
// made of the body's bytes (never more than the body holds).
func FuzzSSE(f *testing.F) {
	for _, s := range []string{
		"data: {\"a\":1}\n\n",
		": c\r\nevent: error\r\ndata: x\r\ndata: y\r\n\r\ndata",
		"data:\n\ndata: [DONE]\n\n",
		"\n\n\n:\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r := sseReader{r: bufio.NewReaderSize(bytes.NewReader(body), 16)}
		for events := 0; ; events++ {
			_, data, err := r.next()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				t.Fatalf("error %v from a byte reader", err)
			}
			if len(data) > len(body) || events > len(body) {
				t.Fatalf("%d bytes of data, event %d, from a %d-byte body", len(data), events, len(body))
			}
		}
	})
}
