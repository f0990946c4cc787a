package testutil

import (
	"io"
	"net/http"
	"testing"
)

// HTTPDo sends req after applying header (a value of "" deletes that
// header; "Host" sets req.Host) and returns the response, whose body it has
// read into body and closed. A request that cannot be sent, or a body that
// cannot be read, fails the test. The HTTP tests of several packages send
// requests with headers a test adds or takes away, so it is written once.
func HTTPDo(t testing.TB, req *http.Request, header map[string]string) (resp *http.Response, body []byte) {
	t.Helper()
	for k, v := range header {
		switch {
		case k == "Host":
			req.Host = v
		case v == "":
			req.Header.Del(k)
		default:
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", req.Method, req.URL, err)
	}
	return resp, body
}
