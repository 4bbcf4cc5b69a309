package projector

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/hub/auth"
	"github.com/argosyproj/argosy/projector/read"
)

// guard serves next, the read API, to callers a's tokens file lets read,
// each within its scope (read.WithScope), as the hub serves it: 401
// without a token the file holds, 403 for a caller with no role, 503 for
// an ID token while the OIDC issuer has not been reached. Unlike the hub
// it audits nothing: the projector has no key to sign audit records with.
func guard(a *auth.Authenticator, log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := a.Request(r)
		if err != nil {
			hint := "send a token of the tokens file the hub takes: Authorization: Bearer <token>"
			if errors.Is(err, auth.ErrBadIDToken) {
				hint = "get a new ID token from your identity provider"
			}
			refuse(w, r, log, auth.Status(err), api.Error{Error: err.Error(), Hint: hint})
			return
		}
		if err := p.Allow(auth.ActionRead, "", nil, ""); err != nil {
			refuse(w, r, log, auth.Status(err), api.Error{Error: err.Error()})
			return
		}
		next.ServeHTTP(w, r.WithContext(read.WithScope(r.Context(), p)))
	})
}

// refuse answers a refused call with its error, as the hub's API does.
func refuse(w http.ResponseWriter, r *http.Request, log *slog.Logger, status int, e api.Error) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	if err := json.NewEncoder(w).Encode(e); err != nil {
		log.DebugContext(r.Context(), "writing a refusal", "err", err)
	}
}
