// Command argosy is Argosy's command-line tool and server binary.
package main

import (
	"os"

	"github.com/argosyproj/argosy/cmd/argosy/internal/root"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
)

func main() { os.Exit(cmdkit.Main(root.NewRoot)) }
