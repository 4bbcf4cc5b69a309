package hub

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub/auth"
)

// Dashboard sessions, served by any replica and ended on every one.
//
// The session cookie holds a session sealed by the hub: AES-256-GCM under
// a key each replica derives from the hub's signing key (so every replica
// holds it, and nothing the hub publishes tells it). Sealed inside are a
// random id, the actor, what the session was started with (the SHA-256 of
// a token of the tokens file, never the token; or an OIDC caller's groups
// that the tokens file lists) and when it expires. The browser can read
// none of it and change none of it. Any replica opens the cookie, and each
// call finds the session's principal in the tokens file as the replica has
// it then: a token taken out of the file, or given another role, changes
// its sessions with it (tokens.go).
//
// A session starts and ends with an audit record naming it
// session/<ref>, the hex of the first 16 bytes of its id's SHA-256. The
// end's record (actionEndSession) is what ends it: every replica's ledger
// reads the audit topic, from sessionEndsKept back when it starts, and
// keeps the ends it reads until no session they could end is still alive.
const (
	actionStartSession = "sessions.start"
	actionEndSession   = "sessions.end"
	sessionTarget      = "session/"
	// sessionSeal is what the seal's keys are derived for, and the
	// additional data of each seal.
	sessionSeal = "dashboard sessions v1"
	// sessionEndsKept is how long an end is kept: a session ends at most
	// sessionMaxAge after it starts, and so after its end; the margin
	// covers replicas whose clocks differ.
	sessionEndsKept = sessionMaxAge + 10*time.Minute
)

// session is what the session cookie holds, sealed.
type session struct {
	ID    string `json:"id"`
	Actor string `json:"actor"`
	// Token is the SHA-256 of the tokens file's token it was started with.
	Token []byte `json:"token,omitempty"`
	// OIDC marks a session of an OIDC caller, with its listed Groups.
	OIDC   bool     `json:"oidc,omitempty"`
	Groups []string `json:"groups,omitempty"`
	// Expiry is when it ends, in Unix seconds.
	Expiry int64 `json:"exp"`
}

// ref names the session on the log; it tells nothing of the cookie.
func (v session) ref() string {
	sum := sha256.Sum256([]byte(v.ID))
	return hex.EncodeToString(sum[:16])
}

// sessions seals and opens session cookies and keeps the ends of sessions
// the log has recorded.
type sessions struct {
	// aeads are one per signing key of the hub's, the newest (the one it
	// rotates to) last: a cookie is sealed with the last and opened with
	// any.
	aeads []cipher.AEAD
	now   func() time.Time

	mu    sync.Mutex
	ended map[string]time.Time // by ref: when the end was recorded
}

// newSessions returns the sessions of a hub that signs with signer.
func newSessions(signer *events.Signer, now func() time.Time) (*sessions, error) {
	keys, err := signer.DeriveKeys(sessionSeal)
	if err != nil {
		return nil, err
	}
	s := &sessions{now: now, ended: map[string]time.Time{}}
	for _, k := range keys {
		b, err := aes.NewCipher(k)
		if err != nil {
			return nil, fmt.Errorf("session seal: %w", err)
		}
		g, err := cipher.NewGCMWithRandomNonce(b)
		if err != nil {
			return nil, fmt.Errorf("session seal: %w", err)
		}
		s.aeads = append(s.aeads, g)
	}
	if len(s.aeads) == 0 {
		return nil, errors.New("session seal: the signer has no key")
	}
	return s, nil
}

// start returns a new session of p, who logged in with tok: it lasts
// sessionMaxAge, or until an OIDC caller's ID token expires.
func (s *sessions) start(p *auth.Principal, tok string) session {
	v := session{ID: rand.Text(), Actor: p.Actor, Expiry: s.now().Add(sessionMaxAge).Unix()}
	if c := p.OIDC(); c != nil {
		v.OIDC, v.Groups = true, c.Groups
		v.Expiry = min(v.Expiry, c.Expires.Unix())
	} else {
		sum := sha256.Sum256([]byte(tok))
		v.Token = sum[:]
	}
	return v
}

// seal returns the cookie value of v.
func (s *sessions) seal(v session) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("session: %w", err)
	}
	sealed := s.aeads[len(s.aeads)-1].Seal(nil, nil, b, []byte(sessionSeal))
	return base64.RawURLEncoding.EncodeToString(sealed), nil
}

// open returns the session of a cookie value that this hub sealed, unless
// it expired or ended.
func (s *sessions) open(value string) (session, error) {
	var v session
	b, err := base64.RawURLEncoding.DecodeString(value)
	opened := false
	for i := len(s.aeads) - 1; i >= 0 && err == nil && !opened; i-- {
		if plain, oerr := s.aeads[i].Open(nil, nil, b, []byte(sessionSeal)); oerr == nil {
			opened, err = true, json.Unmarshal(plain, &v)
		}
	}
	switch {
	case err != nil || !opened || v.ID == "":
		return session{}, fmt.Errorf("%w: the session cookie is not one this hub sealed (or the hub's key changed since): log in again", auth.ErrUnauthenticated)
	case s.now().Unix() >= v.Expiry:
		return session{}, fmt.Errorf("%w: the session expired: log in again", auth.ErrUnauthenticated)
	case s.isEnded(v.ref()):
		return session{}, fmt.Errorf("%w: the session ended (logged out): log in again", auth.ErrUnauthenticated)
	}
	return v, nil
}

// end records that the session ref ended at at, and forgets the ends too
// old to matter.
func (s *sessions) end(ref string, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ended[ref] = at
	for r, t := range s.ended {
		if s.now().Sub(t) > sessionEndsKept {
			delete(s.ended, r)
		}
	}
}

func (s *sessions) isEnded(ref string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.ended[ref]
	return ok
}

// cookie authenticates a request by its session cookie, which must come
// with its CSRF value in the HeaderCSRF header.
func (a *authenticator) cookie(r *http.Request) (*auth.Principal, error) {
	c, err := r.Cookie(SessionCookie)
	if err != nil || c.Value == "" {
		return nil, fmt.Errorf("%w: no bearer token (send Authorization: Bearer <token>)", auth.ErrUnauthenticated)
	}
	if subtle.ConstantTimeCompare([]byte(r.Header.Get(HeaderCSRF)), []byte(csrfValue(c.Value))) != 1 {
		return nil, fmt.Errorf("%w: a call with the dashboard's session cookie needs its %s header", auth.ErrUnauthenticated, HeaderCSRF)
	}
	p, _, err := a.session(c.Value)
	return p, err
}

// session opens a session cookie and returns its principal, as the tokens
// file has it now.
func (a *authenticator) session(value string) (*auth.Principal, session, error) {
	if a.sessions == nil {
		return nil, session{}, fmt.Errorf("%w: this hub keeps no sessions", auth.ErrUnauthenticated)
	}
	v, err := a.sessions.open(value)
	if err != nil {
		return nil, v, err
	}
	if v.OIDC {
		p, err := a.Caller(auth.Caller{Actor: v.Actor, Groups: v.Groups, Expires: time.Unix(v.Expiry, 0)})
		return p, v, err
	}
	var p *auth.Principal
	if len(v.Token) == sha256.Size {
		p = a.Hashed([sha256.Size]byte(v.Token))
	}
	if p == nil {
		return nil, v, fmt.Errorf("%w: the token this session was started with is not one this hub accepts now: log in again", auth.ErrUnauthenticated)
	}
	return p, v, nil
}
