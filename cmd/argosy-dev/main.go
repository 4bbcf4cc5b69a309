// Command argosy-dev runs the whole system on one machine with a simulated
// fleet: what argosy dev runs (docs/dev.md). It is not a release binary:
// it links franz-go's in-memory broker, the agent and the simulation, which
// argosy-hub does not.
package main

import (
	"os"

	"github.com/argosyproj/argosy/cmd/argosy-dev/internal/cli"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
)

func main() { os.Exit(cmdkit.Main(cli.NewRoot)) }
