package browsertest

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestNew loads a page from a local server and reads what a script wrote.
func TestNew(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte(`<!doctype html><p id="out"></p><script>document.getElementById("out").textContent = "ran " + (6*7)</script>`))
	}))
	defer srv.Close()
	ctx := New(t, time.Minute)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL)); err != nil {
		t.Fatal(err)
	}
	text, err := chromedp.Run(ctx, chromedp.Text("#out"))
	if err != nil {
		t.Fatal(err)
	}
	if text != "ran 42" {
		t.Fatalf("page text %q", text)
	}
}
