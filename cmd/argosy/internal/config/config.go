// Package config is the argosy command's configuration file: the contexts,
// each a hub's address with the token to call it with and a default
// project, and which of them is current. `argosy login` writes a context,
// `argosy context` lists, switches and deletes them, and the commands that
// call a server read them (see package apicmd for the order).
//
// The file holds tokens: Save writes it with mode 0600, in a directory it
// creates with mode 0700, and replaces it atomically, so that a reader
// never sees half a file.
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// EnvConfig names the configuration file, instead of DefaultPath's.
const EnvConfig = "ARGOSY_CONFIG"

// Config is the configuration file's content.
type Config struct {
	// CurrentContext names the context the commands use when --context
	// does not name one; empty for none.
	CurrentContext string `json:"currentContext,omitempty"`
	// Contexts are the known hubs, each under a unique name.
	Contexts []Context `json:"contexts,omitempty"`
}

// Context is a server to call and how to call it.
type Context struct {
	// Name is the context's name, unique in the file.
	Name string `json:"name"`
	// Server is the base URL of the hub (or of a projector's read API).
	Server string `json:"server"`
	// Token is the bearer token sent to Server; empty sends none.
	Token string `json:"token,omitempty"`
	// Project is the Argo CD project commands default to; empty for none.
	Project string `json:"project,omitempty"`
	// CertificateAuthority is the path of a PEM CA bundle trusted for
	// Server besides the system's CAs, as a kubeconfig's
	// certificate-authority; empty for the system's alone.
	CertificateAuthority string `json:"certificateAuthority,omitempty"`
	// Log says how to read the hub's log directly, for the commands that
	// do (argosy replay, argosy export); nil when the context does not
	// say. argosy dev writes it.
	Log *LogAccess `json:"log,omitempty"`
}

// LogAccess is how to read a hub's log: its Kafka bootstrap servers, the
// prefix of its topics, the file of the hub's public key (the trust
// anchor), and whether its broker stamps records with their CreateTime
// (argosy dev's embedded broker does).
type LogAccess struct {
	KafkaBrokers     string `json:"kafkaBrokers"`
	TopicPrefix      string `json:"topicPrefix,omitempty"`
	HubKey           string `json:"hubKey,omitempty"`
	AcceptCreateTime bool   `json:"acceptCreateTime,omitempty"`
}

// Path returns the configuration file's path: $ARGOSY_CONFIG, else
// argosy/config.yaml in the user's configuration directory
// ($XDG_CONFIG_HOME or ~/.config on Linux).
func Path() (string, error) {
	if p := os.Getenv(EnvConfig); p != "" {
		return p, nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("finding the argosy config file: %w; set %s to its path", err, EnvConfig)
	}
	return filepath.Join(dir, "argosy", "config.yaml"), nil
}

// Load reads the configuration file at path. A file that does not exist
// is an empty configuration; one that does not parse, or that names a
// context twice, is an error that names the file.
func Load(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &Config{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the argosy config file: %w", err)
	}
	var c Config
	if err := yaml.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("argosy config file %s: %w", path, err)
	}
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("argosy config file %s: %w", path, err)
	}
	return &c, nil
}

func (c *Config) validate() error {
	seen := make(map[string]bool, len(c.Contexts))
	for i, x := range c.Contexts {
		switch {
		case x.Name == "":
			return fmt.Errorf("context %d has no name", i+1)
		case seen[x.Name]:
			return fmt.Errorf("context %q is there twice", x.Name)
		}
		seen[x.Name] = true
	}
	return nil
}

// Save writes c to path with mode 0600, creating its directory with mode
// 0700 if needed. It writes a temporary file beside path and renames it
// over path, so that path holds either the old or the new configuration.
// When path is a symbolic link, the file it points to is replaced.
func (c *Config) Save(path string) error {
	if err := c.validate(); err != nil {
		return err
	}
	b, err := yaml.Marshal(c)
	if err != nil {
		return fmt.Errorf("encoding the argosy config: %w", err)
	}
	if target, err := filepath.EvalSymlinks(path); err == nil {
		path = target
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("saving the argosy config: %w", err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("saving the argosy config: %w", err)
	}
	if err := writeFile(f, b); err != nil {
		return errors.Join(fmt.Errorf("saving the argosy config %s: %w", path, err), os.Remove(f.Name()))
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return errors.Join(fmt.Errorf("saving the argosy config: %w", err), os.Remove(f.Name()))
	}
	return nil
}

// writeFile writes b to f, which holds a token, readable by its owner only,
// and closes it.
func writeFile(f *os.File, b []byte) error {
	err := f.Chmod(0o600)
	if err == nil {
		_, err = f.Write(b)
	}
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// Find returns the context named name, or nil.
func (c *Config) Find(name string) *Context {
	i := slices.IndexFunc(c.Contexts, func(x Context) bool { return x.Name == name })
	if i < 0 {
		return nil
	}
	return &c.Contexts[i]
}

// Current returns the current context, or nil when there is none. The
// error says so when CurrentContext names a context that is not there.
func (c *Config) Current() (*Context, error) {
	if c.CurrentContext == "" {
		return nil, nil
	}
	x := c.Find(c.CurrentContext)
	if x == nil {
		return nil, fmt.Errorf("the current context %q is not in the config: %s", c.CurrentContext, c.Known())
	}
	return x, nil
}

// Set adds x, or replaces the context of the same name in place.
func (c *Config) Set(x Context) {
	if old := c.Find(x.Name); old != nil {
		*old = x
		return
	}
	c.Contexts = append(c.Contexts, x)
}

// Delete removes the context named name, and unsets it if it was current.
// It reports whether there was such a context.
func (c *Config) Delete(name string) bool {
	n := len(c.Contexts)
	c.Contexts = slices.DeleteFunc(c.Contexts, func(x Context) bool { return x.Name == name })
	if c.CurrentContext == name {
		c.CurrentContext = ""
	}
	return len(c.Contexts) < n
}

// Names returns the contexts' names, in the file's order.
func (c *Config) Names() []string {
	names := make([]string, len(c.Contexts))
	for i, x := range c.Contexts {
		names[i] = x.Name
	}
	return names
}

// Known says which contexts there are, for an error about one that is not
// there.
func (c *Config) Known() string {
	if len(c.Contexts) == 0 {
		return "there are none; run: argosy login SERVER"
	}
	return "known contexts are " + strings.Join(c.Names(), ", ")
}
