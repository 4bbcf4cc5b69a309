// Command argosy-hub is Argosy's hub server: the write API, with the
// projector's read API beside it. It is a binary of its own because it
// links Argo CD's types to validate what it accepts, which the argosy CLI
// must not (see docs/hub.md).
package main

import (
	"os"

	"github.com/argosyproj/argosy/cmd/argosy-hub/internal/cli"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
)

func main() { os.Exit(cmdkit.Main(cli.NewRoot)) }
