package natscluster

import (
	"net/url"
	"strings"
)

// Redact returns a NATS URL list (comma-separated, as Options.URL takes it)
// fit for a log or an error: each URL's password replaced, a lone user
// (which NATS reads as a token) too, and a URL with credentials that does
// not parse left out whole.
func Redact(list string) string {
	parts := strings.Split(list, ",")
	for i, p := range parts {
		u, err := url.Parse(strings.TrimSpace(p))
		switch {
		case err == nil && u.User != nil:
			if _, has := u.User.Password(); !has {
				u.User = url.User("xxxxx")
			}
			parts[i] = u.Redacted()
		case err != nil && strings.Contains(p, "@"):
			parts[i] = "(a URL that does not parse)"
		}
	}
	return strings.Join(parts, ",")
}
