package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"

	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/spoke"
)

// join registers this cluster's keys with the hub by proving its join
// token. Keys are made in --keys-dir first if it has none, so a join that
// fails half-way is retried with the same keys on the next start. A token
// the hub reports used is taken as a join done before (the answer may have
// been lost): the agent then starts, and its events verify only if those
// keys are the ones registered.
func join(ctx context.Context, o *RunOptions, log *slog.Logger) error {
	keys, err := spoke.LoadKeys(o.KeysDir)
	if errors.Is(err, fs.ErrNotExist) {
		if keys, err = spoke.GenerateKeys(); err != nil {
			return err
		}
		if err := spoke.WriteKeys(o.KeysDir, o.Cluster, keys); err != nil {
			return fmt.Errorf("join: %w", err)
		}
	} else if err != nil {
		return fmt.Errorf("join: keys: %w", err)
	}
	hc, err := cmdkit.CAClient(o.HubCA)
	if err != nil {
		return fmt.Errorf("--hub-ca: %w", err)
	}
	c, err := api.NewClient(o.HubURL, "", hc)
	if err != nil {
		return fmt.Errorf("--hub-url: %w", err)
	}
	pub := keys.Public(o.Cluster)
	_, err = c.Join(ctx, o.Cluster, api.JoinRequest{Token: o.JoinToken, SigningKey: pub[0].PublicKey, SealingKey: pub[1].PublicKey})
	switch {
	case err == nil:
		log.InfoContext(ctx, "joined the fleet: the hub registered this cluster's keys", "signingKey", pub[0].KeyID)
	case api.StatusOf(err) == http.StatusConflict:
		log.InfoContext(ctx, "the join token was used already; starting with the keys in --keys-dir", "signingKey", pub[0].KeyID)
	case cmdkit.Untrusted(err):
		return fmt.Errorf("join: the hub's certificate is not trusted: if a private CA signed it, give that CA's PEM bundle with --hub-ca (env ARGOSY_HUB_CA): %w", err)
	default:
		return fmt.Errorf("join: %w", err)
	}
	return nil
}
