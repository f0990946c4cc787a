package console

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

//go:embed web
var web embed.FS

// Options configures Handler.
type Options struct {
	// CacheControl is the Cache-Control of the page's files; "" means
	// "no-cache": the browser revalidates, so a new binary's page is never
	// mixed with an old one's modules.
	CacheControl string
}

// Files returns the page's files, rooted at index.html.
func Files() fs.FS {
	sub, err := fs.Sub(web, "web")
	if err != nil {
		panic("console: embedded web directory missing: " + err.Error()) // a build defect, not a run-time condition
	}
	return sub
}

// Handler serves the console's page at the root of its path (mount it with
// http.StripPrefix). Every answer carries the security headers: a CSP
// that allows this origin only (and its WebSocket), no framing, no
// sniffing, no referrer.
func Handler(opts Options) http.Handler {
	cc := opts.CacheControl
	if cc == "" {
		cc = "no-cache"
	}
	files := http.FileServerFS(Files())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp(r.Host))
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=()")
		h.Set("Cache-Control", cc)
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		files.ServeHTTP(w, r)
	})
}

// csp is the page's Content-Security-Policy. connect-src names the
// WebSocket of this host explicitly, since not every browser counts ws: as
// 'self'; a Host that is not a plain host[:port] is left out.
func csp(host string) string {
	connect := "'self'"
	if validHost(host) {
		connect += " ws://" + host + " wss://" + host
	}
	return "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; media-src 'self' data:; connect-src " + connect +
		"; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
}

// validHost reports whether h is made only of the characters of a host name,
// an IP address (IPv6 in brackets) and a port.
func validHost(h string) bool {
	if h == "" || len(h) > 255 {
		return false
	}
	for _, c := range h {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune(".-:[]", c)
		if !ok {
			return false
		}
	}
	return true
}
