package cli

import (
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/projector/read"
)

// The read API's address: the --server flag, or ARGOSY_SERVER, or this.
const (
	EnvServer     = "ARGOSY_SERVER"
	DefaultServer = "http://127.0.0.1:8080"
)

// APIOptions are the flags of every command that reads the read API.
type APIOptions struct {
	// Server is the read API's base URL.
	Server string
	// HTTPClient is the client to call it with; nil for a default one.
	HTTPClient *http.Client
}

// addAPIFlags binds --server, whose default is ARGOSY_SERVER when set.
func addAPIFlags(cmd *cobra.Command, o *APIOptions) {
	def := DefaultServer
	if v := os.Getenv(EnvServer); v != "" {
		def = v
	}
	cmd.Flags().StringVar(&o.Server, "server", def, "base URL of the read API (env "+EnvServer+")")
}

// client checks --server and returns a client of it; a bad URL is a
// cmdkit.FlagError.
func (o *APIOptions) client() (*read.Client, error) {
	c, err := read.NewClient(o.Server, o.HTTPClient)
	if err != nil {
		return nil, &cmdkit.FlagError{Err: fmt.Errorf("--server: %w", err)}
	}
	return c, nil
}

// parseTime parses an RFC 3339 flag value; empty is the zero time.
func parseTime(flag, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, &cmdkit.FlagError{Err: fmt.Errorf("--%s %q: want an RFC 3339 time such as 2026-03-02T15:04:05Z", flag, v)}
	}
	return t, nil
}
