// Command argosy is Argosy's command-line tool and server binary.
package main

import (
	"os"

	"github.com/argosyproj/argosy/internal/cli"
)

func main() { os.Exit(cli.Main()) }
