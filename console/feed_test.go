package console

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"

	"github.com/mew-protocol/mew/internal/browsertest"
	"github.com/mew-protocol/mew/internal/feed/feedtest"
)

// feedPage runs js/feed.js over every case of the vectors and leaves the
// events it read in window.feedResult, one list per envelope.
const feedPage = `<!doctype html><script type="module">
import { Reader } from "/js/feed.js";
const vf = await (await fetch("/vectors.json")).json();
window.feedResult = JSON.stringify(vf.cases.map((c) => {
  const r = new Reader();
  return c.envelopes.map((env) => r.read(env));
}));
</script>`

// TestFeedVectors: the console reads the shared vectors' envelopes as the
// Go reader does, in Chromium.
func TestFeedVectors(t *testing.T) {
	// The shared vectors; internal/feed's Go reader is held to them too.
	raw, err := os.ReadFile(feedtest.Path(t))
	if err != nil {
		t.Fatal(err)
	}
	vf := feedtest.Load(t)
	mux := http.NewServeMux()
	mux.Handle("/js/", http.FileServerFS(Files()))
	mux.HandleFunc("/vectors.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(raw)
	})
	mux.HandleFunc("/feed.html", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte(feedPage))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	ctx := browsertest.New(t, time.Minute)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/feed.html")); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`typeof window.feedResult === "string"`, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("the page did not read the vectors: %v", err)
	}
	out, err := chromedp.Run(ctx, chromedp.Evaluate[string](`window.feedResult`))
	if err != nil {
		t.Fatal(err)
	}
	var got [][][]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(vf.Cases) {
		t.Fatalf("%d cases read, want %d", len(got), len(vf.Cases))
	}
	for i, c := range vf.Cases {
		var want [][]any
		b, _ := json.Marshal(c.Events)
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got[i]); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.Name, diff)
		}
	}
}
