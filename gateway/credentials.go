package gateway

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// credKind is a kind of credential: a secret that lets its bearer act as a
// participant.
type credKind uint8

const (
	credToken   credKind = iota // a space token: config, environment, token file
	credInvite                  // the token an invitation made
	credCode                    // a console one-time code, good for one exchange
	credSession                 // a console session, exchanged for a code
	credLink                    // a console one-time code sent by the webhook notifier (notify.go)
)

func (k credKind) String() string {
	return [...]string{"token", "invitation token", "console code", "console session", "webhook link"}[k]
}

// Per-participant quotas of console credentials. One participant's codes
// and sessions never displace another's: past its quota of codes a
// participant is refused; past its quota of sessions its own oldest session
// ends. The tables are bounded by the quotas times the number of
// participants (which invitations bound).
const (
	maxCodesPerMember    = 16
	maxSessionsPerMember = 16
	// maxLinksPerMember bounds the webhook links of an approver, whom many
	// proposals may await at once: past it, its own oldest link ends.
	maxLinksPerMember = 64
)

// standing is what a participant's credentials are worth.
type standing int32

const (
	standingGood    standing = iota // its credentials identify it
	standingKicked                  // kicked: nothing identifies it for the rest of the run
	standingRevoked                 // its tokens were revoked; a new token restores it
)

func (s standing) String() string {
	return [...]string{"in good standing", "kicked", "its token was revoked"}[s]
}

// credential is what one secret stands for: a participant of a space, of a
// kind, until a time (zero: no end of its own).
type credential struct {
	kind    credKind
	sp      *liveSpace
	m       *member
	made    time.Time
	expires time.Time
}

func (c credential) live(now time.Time) bool {
	return c.expires.IsZero() || now.Before(c.expires)
}

// credentials is the one authority on credentials: every join path and
// every HTTP endpoint resolves a secret here, and a kick, a token
// revocation or a shutdown ends a participant's credentials here, all at
// once. Secrets are kept by their SHA-256 only.
//
// Lock order: credentials.mu is taken last (after liveSpace.mu) and nothing
// is called with it held.
type credentials struct {
	mu   sync.Mutex
	keys map[[32]byte]credential
	held map[*member]map[[32]byte]credKind // each participant's keys
}

func newCredentials() *credentials {
	return &credentials{keys: make(map[[32]byte]credential), held: make(map[*member]map[[32]byte]credKind)}
}

// errCredentialTaken is returned when a secret already stands for someone.
var errCredentialTaken = fmt.Errorf("gateway: credential already in use")

// addLocked registers key as a credential of c.m; mu must be held.
func (cs *credentials) addLocked(key [32]byte, c credential) error {
	if prev, dup := cs.keys[key]; dup && prev.m != c.m {
		return fmt.Errorf("%w: participants %s and %s share a token", errCredentialTaken, prev.m.name, c.m.name)
	}
	cs.keys[key] = c
	h := cs.held[c.m]
	if h == nil {
		h = make(map[[32]byte]credKind)
		cs.held[c.m] = h
	}
	h[key] = c.kind
	return nil
}

// removeLocked forgets key; mu must be held.
func (cs *credentials) removeLocked(key [32]byte) {
	c, ok := cs.keys[key]
	if !ok {
		return
	}
	delete(cs.keys, key)
	if h := cs.held[c.m]; h != nil {
		delete(h, key)
		if len(h) == 0 {
			delete(cs.held, c.m)
		}
	}
}

// addTokens makes m's tokens (and the token hashes it is known by) identify
// it, restoring its standing if only its tokens had been revoked.
func (cs *credentials) addTokens(sp *liveSpace, m *member) error {
	kind := credToken
	if m.cfg == nil {
		kind = credInvite
	}
	keys := m.tokenKeys()
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for _, k := range keys {
		if prev, dup := cs.keys[k]; dup && prev.m != m {
			return fmt.Errorf("%w: participants %s and %s share a token", errCredentialTaken, prev.m.name, m.name)
		}
	}
	for _, k := range keys {
		_ = cs.addLocked(k, credential{kind: kind, sp: sp, m: m})
	}
	m.standing.CompareAndSwap(int32(standingRevoked), int32(standingGood))
	return nil
}

// replaceTokens makes toks m's tokens instead of those it had (a token file
// rewritten while the gateway runs), and restores its standing if only its
// tokens had been revoked.
func (cs *credentials) replaceTokens(sp *liveSpace, m *member, toks []string) error {
	cs.mu.Lock()
	for k, kind := range cs.held[m] {
		if kind == credToken || kind == credInvite {
			cs.removeLocked(k)
		}
	}
	m.tokens = m.tokens[:0:0]
	for _, t := range toks {
		m.tokens = append(m.tokens, []byte(t))
	}
	cs.mu.Unlock()
	return cs.addTokens(sp, m)
}

// token resolves a participant's token (not a console credential). A
// non-empty spaceID must be the participant's space.
func (cs *credentials) token(secret, spaceID string) (*liveSpace, *member) {
	return cs.resolve(secret, spaceID, time.Time{}, credToken, credInvite)
}

// resolve finds what secret stands for, among the kinds given, at now
// (zero: tokens only, which do not expire). A participant not in good
// standing is nobody.
func (cs *credentials) resolve(secret, spaceID string, now time.Time, kinds ...credKind) (*liveSpace, *member) {
	if secret == "" {
		return nil, nil
	}
	key := sha256.Sum256([]byte(secret))
	cs.mu.Lock()
	c, ok := cs.keys[key]
	// m.tokens change under cs.mu (replaceTokens), so they are compared here.
	ok = ok && (c.kind != credToken && c.kind != credInvite || c.m.ownsToken([]byte(secret)))
	cs.mu.Unlock()
	switch {
	case !ok || !slices.Contains(kinds, c.kind) || !c.live(now):
		return nil, nil
	case standing(c.m.standing.Load()) != standingGood:
		return nil, nil
	case spaceID != "" && spaceID != c.sp.id:
		return nil, nil
	}
	return c.sp, c.m
}

// errQuota is a participant's quota of console codes, used up.
type errQuota struct{ limit int }

func (e errQuota) Error() string {
	return fmt.Sprintf("you have %d console links outstanding; use or let one expire first", e.limit)
}

// mint makes a new secret of kind (a console code or session) for m,
// within m's quota. prefix starts the secret.
func (cs *credentials) mint(sp *liveSpace, m *member, kind credKind, prefix string, now time.Time, ttl time.Duration) (string, time.Time, error) {
	if standing(m.standing.Load()) != standingGood {
		return "", time.Time{}, fmt.Errorf("%s is %s", m.name, standing(m.standing.Load()))
	}
	secret := prefix + rand.Text() // 130 random bits
	key := sha256.Sum256([]byte(secret))
	c := credential{kind: kind, sp: sp, m: m, made: now, expires: now.Add(ttl)}
	limit := maxCodesPerMember
	switch kind {
	case credSession:
		limit = maxSessionsPerMember
	case credLink:
		limit = maxLinksPerMember
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	// Re-checked under the lock: an end() that ran since cannot miss this one.
	if standing(m.standing.Load()) != standingGood {
		return "", time.Time{}, fmt.Errorf("%s is %s", m.name, standing(m.standing.Load()))
	}
	var oldest [32]byte
	var oldestAt time.Time
	n := 0
	for k, kk := range cs.held[m] {
		if kk != kind {
			continue
		}
		if old := cs.keys[k]; !old.live(now) {
			cs.removeLocked(k)
			continue
		} else if n == 0 || old.made.Before(oldestAt) {
			oldest, oldestAt = k, old.made
		}
		n++
	}
	if n >= limit {
		if kind == credCode {
			return "", time.Time{}, errQuota{limit}
		}
		cs.removeLocked(oldest) // its own oldest session or link, nobody else's
	}
	_ = cs.addLocked(key, c)
	return secret, c.expires, nil
}

// take removes a one-time code (a console link's or a webhook link's) and
// returns what it stood for, if it was live and its participant in good
// standing.
func (cs *credentials) take(secret string, now time.Time) (credential, bool) {
	key := sha256.Sum256([]byte(secret))
	cs.mu.Lock()
	c, ok := cs.keys[key]
	code := ok && (c.kind == credCode || c.kind == credLink)
	if code {
		cs.removeLocked(key)
	}
	cs.mu.Unlock()
	ok = code && c.live(now) && standing(c.m.standing.Load()) == standingGood
	return c, ok
}

// drop ends one console session (a logout).
func (cs *credentials) drop(secret string) {
	key := sha256.Sum256([]byte(secret))
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if c, ok := cs.keys[key]; ok && c.kind == credSession {
		cs.removeLocked(key)
	}
}

// end removes m's credentials of the given kinds (all kinds when none is
// given) and sets its standing, unless it is already worse. It returns how
// many credentials ended.
func (cs *credentials) end(m *member, st standing, kinds ...credKind) int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if st != standingGood {
		for {
			cur := m.standing.Load()
			if cur == int32(standingKicked) || m.standing.CompareAndSwap(cur, int32(st)) {
				break
			}
		}
	}
	n := 0
	for k, kind := range cs.held[m] {
		if len(kinds) == 0 || slices.Contains(kinds, kind) {
			cs.removeLocked(k)
			n++
		}
	}
	return n
}

// standingOf is m's standing; an atomic read, safe without locks.
func (m *member) standingOf() standing { return standing(m.standing.Load()) }

// endParticipant is the one way a participant's standing ends: kicked, or
// its tokens revoked. Every credential of it ends at once — tokens,
// invitation tokens, console codes and sessions — its connection is closed,
// and the grants it made or holds go (settleGrantsLocked). The alias
// bindings it made stay reserved to it, so nobody else can take its names.
// sp.mu must be held.
func (sp *liveSpace) endParticipantLocked(m *member, st standing, code websocket.StatusCode, reason string) {
	n := sp.srv.creds.end(m, st)
	sp.srv.opts.Logger.Info("participant's credentials ended", "space", sp.id, "participant", m.name, "why", st.String(), "credentials", n)
	if s := m.sess; s != nil {
		s.kill(code, closeReason(reason))
		sp.detachLocked(s)
	}
	sp.settleGrantsLocked(sp.srv.now())
}

// tokenRecheck is how often the token files are read again even when their
// directory looks unchanged (a rewrite within the file system's timestamp
// granularity changes no modification time).
const tokenRecheck = 10 * time.Second

// tokenWatch is what watchTokens last saw of a space's token directory;
// the watchdog's alone.
type tokenWatch struct {
	mod     time.Time
	checked time.Time
}

// watchTokens notices a token revoked while the gateway runs: a token file
// removed (mew token revoke) or rewritten. The participant's standing ends
// with every credential of it, its connection included; a rewritten file's
// new token then identifies it again. The watchdog calls it; the files are
// read without any lock held.
func (sp *liveSpace) watchTokens(now time.Time) {
	store := sp.srv.opts.TokenStore(sp.cfg)
	if store.Dir == "" {
		return
	}
	var mod time.Time
	if fi, err := os.Stat(store.Dir); err == nil {
		mod = fi.ModTime()
	}
	if mod.Equal(sp.tokWatch.mod) && now.Sub(sp.tokWatch.checked) < tokenRecheck {
		return
	}
	sp.tokWatch.mod, sp.tokWatch.checked = mod, now
	sp.mu.Lock()
	var watched []*member
	for _, m := range sp.order {
		if m.tokenFile && m.standingOf() != standingKicked {
			watched = append(watched, m)
		}
	}
	sp.mu.Unlock()
	for _, m := range watched {
		tok, err := store.FileToken(m.name)
		switch {
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			sp.srv.opts.Logger.Warn("token file unreadable; the token in use stays valid", "space", sp.id, "participant", m.name, "err", err)
			continue
		case err == nil && subtle.ConstantTimeCompare([]byte(tok), []byte(m.fileToken)) == 1:
			continue
		}
		sp.mu.Lock()
		if m.standingOf() == standingGood {
			sp.endParticipantLocked(m, standingRevoked, CloseRevoked, "your token was revoked")
		}
		sp.mu.Unlock()
		m.fileToken = tok
		if tok != "" {
			if err := sp.srv.creds.replaceTokens(sp, m, []string{tok}); err != nil {
				sp.srv.opts.Logger.Warn("new token refused", "space", sp.id, "participant", m.name, "err", err)
			}
		}
	}
}

// tokenKeys returns the keys of srv.tokens naming m: its tokens' hashes,
// and the hashes it is known by alone.
func (m *member) tokenKeys() [][32]byte {
	keys := slices.Clone(m.hashes)
	for _, t := range m.tokens {
		keys = append(keys, tokenKey(t))
	}
	return keys
}
