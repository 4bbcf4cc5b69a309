package hub

import (
	"errors"
	"net/http"

	"github.com/argosyproj/argosy/hub/auth"
)

// authenticator finds the principal of a call: by its bearer token (a
// token of the tokens file, or an OIDC ID token; package auth), or by its
// dashboard session.
type authenticator struct {
	*auth.Authenticator
	// sessions opens session cookies (sessions.go); nil: none are taken.
	sessions *sessions
}

func (a *authenticator) authenticate(r *http.Request) (*auth.Principal, error) {
	tok, ok := auth.Bearer(r)
	if !ok {
		return a.cookie(r)
	}
	return a.Token(r.Context(), tok)
}

// actionJoin is a spoke proving its join token; the other actions are
// package auth's.
const actionJoin = "clusters.join"

// allowRegistered checks a change to a cluster against the cluster as it
// is (cur, when it is registered): a change is allowed only when it is on
// both sides, what the cluster is and what it would become.
func allowRegistered(p *auth.Principal, action, cluster string, cur entry, exists bool) error {
	if !exists || cur.deleted {
		return nil
	}
	return p.AllowShared(action, cluster, cur.labels, "")
}

// authHint is what to do about a refused bearer: renew an ID token, or
// log in with a token the hub knows.
func authHint(r *http.Request, err error) string {
	if errors.Is(err, auth.ErrBadIDToken) {
		return "get a new ID token from your identity provider, then argosy login " + hubURL(r) + " --token …"
	}
	return "argosy login " + hubURL(r) + " --token …"
}
