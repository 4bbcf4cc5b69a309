// Package readapi binds the flags of the argosy commands that read the
// projector's read API (fleet, cluster, app, audit and report) and makes
// their client. It lives apart from cmdkit, which the spoke's binary links
// too, so that only the argosy binary links the read API's client.
package readapi

import (
	"fmt"
	"net/http"
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

// Options are the flags of every command that reads the read API.
type Options struct {
	// Server is the read API's base URL.
	Server string
	// HTTPClient is the client to call it with; nil for a default one.
	HTTPClient *http.Client
}

// AddFlags binds --server, whose default is ARGOSY_SERVER when set.
func AddFlags(cmd *cobra.Command, o *Options) {
	cmd.Flags().StringVar(&o.Server, "server", cmdkit.Env(EnvServer, DefaultServer), "base URL of the read API (env "+EnvServer+")")
}

// Client checks --server and returns a client of it; a bad URL is a
// cmdkit.FlagError.
func (o *Options) Client() (*read.Client, error) {
	c, err := read.NewClient(o.Server, o.HTTPClient)
	if err != nil {
		return nil, &cmdkit.FlagError{Err: fmt.Errorf("--server: %w", err)}
	}
	return c, nil
}

// ParseTime parses the RFC 3339 value of --flag; empty is the zero time, and
// anything else that does not parse is a cmdkit.FlagError.
func ParseTime(flag, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, &cmdkit.FlagError{Err: fmt.Errorf("--%s %q: want an RFC 3339 time such as 2026-03-02T15:04:05Z", flag, v)}
	}
	return t, nil
}
