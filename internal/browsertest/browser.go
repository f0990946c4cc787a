package browsertest

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// candidates are the names Chromium goes by, in the order they are tried
// after $MEW_CHROMIUM.
var candidates = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// Path returns the Chromium executable to use, or "" when there is none.
func Path() string {
	if p := os.Getenv("MEW_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range candidates {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// New starts a headless Chromium for t and returns a chromedp context for
// one tab in it, valid until the test ends. The whole test is bounded by
// timeout.
func New(t testing.TB, timeout time.Duration) context.Context {
	t.Helper()
	path := Path()
	if path == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("no Chromium found (install Debian's chromium or set MEW_CHROMIUM); under CI the browser tests must run")
		}
		t.Skip("no Chromium found: install Debian's chromium or set MEW_CHROMIUM to run the browser tests")
	}
	// Flags: headless without a sandbox (tests run as root in CI), and
	// nothing that reaches out to the network on its own, which a closed
	// machine refuses noisily and slowly.
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 800),
	}
	ctx, cancelTimeout := context.WithTimeout(context.Background(), timeout)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(func() {
		cancelBrowser()
		cancelAlloc()
		cancelTimeout()
	})
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start Chromium %s: %v", path, err)
	}
	return bctx
}
