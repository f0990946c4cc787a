package llm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"net/http"
	"time"
)

// errAttemptTimeout is the cause of an attempt of Complete ended by the
// timeout. It is not retried: a server too slow once is slow again.
var errAttemptTimeout = errors.New("llm: attempt timed out")

// Backoff between attempts when the server names no wait: doubling from
// retryBase up to retryMax, less up to a quarter at random so that clients
// turned away together do not return together.
const (
	retryBase = 500 * time.Millisecond
	retryMax  = 8 * time.Second
	// maxRetryAfter bounds the wait a server may ask for; past it the
	// backoff applies.
	maxRetryAfter = time.Minute
)

// complete sends a Complete request, retrying as configured, and returns
// the answer's body, bounded by maxBody.
func (p *OpenAI) complete(ctx context.Context, body []byte, c *capture) ([]byte, error) {
	res, done, err := p.send(ctx, body, false, c)
	if err != nil {
		return nil, err
	}
	defer done()
	b, err := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("read the answer: %w", err)
	}
	return b, nil
}

// stream sends a Stream request, retrying as configured until an answer
// begins, and hands each chunk to each. It returns nil at the stream's
// end ([DONE], or the end of the body), an [*APIError] with Status 0 for an
// error event, and an error wrapping [ErrBadResponse] for what is not a
// stream of chunks.
func (p *OpenAI) stream(ctx context.Context, body []byte, c *capture, each func(*wireChunk)) error {
	res, done, err := p.send(ctx, body, true, c)
	if err != nil {
		return err
	}
	defer done()
	defer res.Body.Close()
	ct, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
	switch ct {
	case "text/event-stream", "":
	case "application/json":
		// A server that does not stream answers whole: take it as one
		// chunk.
		return wholeAnswer(res.Body, each)
	default:
		head, _ := io.ReadAll(io.LimitReader(res.Body, 512))
		return fmt.Errorf("%w: the answer is %s, not an event stream: %s", ErrBadResponse, ct, excerpt(head))
	}
	r := sseReader{r: bufio.NewReaderSize(res.Body, 16<<10)}
	for n := 1; ; n++ {
		event, data, err := r.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read the stream: %w", err)
		}
		if string(bytes.TrimSpace(data)) == "[DONE]" {
			return nil
		}
		var ch wireChunk
		if err := json.Unmarshal(data, &ch); err != nil {
			return fmt.Errorf("%w: event %d of the stream is not a JSON chunk (%v): %s", ErrBadResponse, n, err, excerpt(data))
		}
		if event == "error" || (len(ch.Error) > 0 && string(ch.Error) != "null") {
			return parseAPIError(0, data)
		}
		each(&ch)
	}
}

// wholeAnswer reads a completion sent instead of a stream as one chunk.
func wholeAnswer(body io.Reader, each func(*wireChunk)) error {
	b, err := io.ReadAll(body)
	if err != nil {
		return fmt.Errorf("read the answer: %w", err)
	}
	var probe struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(b, &probe) == nil && len(probe.Error) > 0 && string(probe.Error) != "null" {
		return parseAPIError(0, b)
	}
	var cc wireCompletion
	if err := json.Unmarshal(b, &cc); err != nil {
		return fmt.Errorf("%w: the answer is not a chat completion (%v): %s", ErrBadResponse, err, excerpt(b))
	}
	ch := wireChunk{Model: cc.Model, Usage: cc.Usage}
	for _, choice := range cc.Choices {
		ch.Choices = append(ch.Choices, struct {
			Index        int       `json:"index"`
			Delta        wireDelta `json:"delta"`
			FinishReason string    `json:"finish_reason"`
		}{choice.Index, choice.Message, choice.FinishReason})
	}
	each(&ch)
	return nil
}

// send makes attempts until one is answered with a success, one fails in a
// way that is not retried, or the retries are used up. On success the
// caller reads the answer's body (bounded by maxBody) and calls done. An
// error status leaves what the server said in c and returns an error.
func (p *OpenAI) send(ctx context.Context, body []byte, stream bool, c *capture) (res *http.Response, done func(), err error) {
	for attempt := 0; ; attempt++ {
		actx, cancel := ctx, context.CancelFunc(func() {})
		if !stream && p.timeout > 0 {
			actx, cancel = context.WithTimeoutCause(ctx, p.timeout, errAttemptTimeout)
		}
		res, err := p.attempt(actx, body, stream, c)
		last := attempt >= p.retries
		var wait time.Duration
		switch {
		case err != nil:
			timedOut := ctx.Err() == nil && errors.Is(context.Cause(actx), errAttemptTimeout)
			cancel()
			if timedOut {
				return nil, nil, errAttemptTimeout
			}
			if ctx.Err() != nil || last {
				return nil, nil, err
			}
		case res.StatusCode >= 200 && res.StatusCode < 300:
			if c.maxBody > 0 {
				res.Body = &cappedBody{ReadCloser: res.Body, left: c.maxBody, over: &c.tooLarge}
			}
			return res, cancel, nil
		default:
			c.body, _ = io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
			_ = res.Body.Close()
			cancel()
			err = fmt.Errorf("HTTP %d", res.StatusCode)
			if res.StatusCode < 400 {
				return nil, nil, fmt.Errorf("%w: HTTP %d: %s", ErrBadResponse, res.StatusCode, excerpt(c.body))
			}
			if last || !retryable(res) {
				return nil, nil, err
			}
			wait = retryAfter(res.Header)
		}
		if wait <= 0 || wait > maxRetryAfter {
			wait = backoff(attempt)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil, err
		case <-t.C:
		}
	}
}

// attempt sends the request once and records the answer's status and
// header in c.
func (p *OpenAI) attempt(ctx context.Context, body []byte, stream bool, c *capture) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("build the request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if stream {
		req.Header.Set("Accept", "text/event-stream")
	}
	req.Header.Set("User-Agent", "mew")
	for k, vs := range p.header {
		req.Header[http.CanonicalHeaderKey(k)] = vs
	}
	if p.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+p.apiKey)
	}
	c.attempts++
	c.status, c.header, c.body = 0, nil, nil
	res, err := p.http.Do(req)
	if err != nil {
		return nil, err
	}
	c.status, c.header = res.StatusCode, res.Header
	return res, nil
}

// retryable reports whether an error status is worth another attempt: the
// server's x-should-retry when it says, else 408, 409, 429 and 5xx, as
// OpenAI's own clients do.
func retryable(res *http.Response) bool {
	switch res.Header.Get("X-Should-Retry") {
	case "true":
		return true
	case "false":
		return false
	}
	s := res.StatusCode
	return s == http.StatusRequestTimeout || s == http.StatusConflict || s == http.StatusTooManyRequests || s >= 500
}

// backoff is the wait before retry number attempt+1.
func backoff(attempt int) time.Duration {
	d := retryMax
	if attempt < 5 {
		d = min(retryBase<<attempt, retryMax)
	}
	return time.Duration(float64(d) * (1 - 0.25*rand.Float64()))
}

// sseReader reads server-sent events: lines of "field: value", an event
// ending at a blank line, data lines joined with '\n', comments and other
// fields skipped. Its lines are bounded by the body's own bound.
type sseReader struct {
	r    *bufio.Reader
	line []byte
	data []byte
}

// next returns the next event's name and data (valid until the next call);
// io.EOF at the end of the body. A last event without its blank line counts.
func (s *sseReader) next() (event string, data []byte, err error) {
	s.data = s.data[:0]
	has := false
	for {
		line, err := s.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) && has {
				return event, s.data, nil
			}
			return "", nil, err
		}
		if len(line) == 0 {
			if has {
				return event, s.data, nil
			}
			event = ""
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte{':'})
		value = bytes.TrimPrefix(value, []byte{' '})
		switch string(field) {
		case "data":
			if has {
				s.data = append(s.data, '\n')
			}
			s.data = append(s.data, value...)
			has = true
		case "event":
			event = string(value)
		}
	}
}

// readLine returns the next line without its line ending; a last line
// without one counts.
func (s *sseReader) readLine() ([]byte, error) {
	s.line = s.line[:0]
	for {
		frag, err := s.r.ReadSlice('\n')
		s.line = append(s.line, frag...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && (!errors.Is(err, io.EOF) || len(s.line) == 0) {
			return nil, err
		}
		break
	}
	line := bytes.TrimSuffix(s.line, []byte{'\n'})
	return bytes.TrimSuffix(line, []byte{'\r'}), nil
}
