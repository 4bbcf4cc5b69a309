// Package kafkaconn owns how Argosy's commands connect to Kafka: the
// bootstrap brokers, TLS (the CA to trust, a client certificate for mTLS)
// and SASL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512), as flags with environment
// fallbacks, checked at once by Validate and turned into franz-go client
// options by Opts.
//
// The options match what Strimzi gives a client: the cluster CA's ca.crt,
// and for a KafkaUser either user.crt and user.key (authentication type tls)
// or a password in a Secret (type scram-sha-512). Secrets are read from
// files, or for the password from the environment, never from a flag, so
// that they do not show in process lists.
package kafkaconn

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// The SASL mechanisms. Options.SASLMechanism takes them in any case.
const (
	MechanismNone        = "none"
	MechanismPlain       = "PLAIN"
	MechanismSCRAMSHA256 = "SCRAM-SHA-256"
	MechanismSCRAMSHA512 = "SCRAM-SHA-512"
)

// Options say how to reach and authenticate to Kafka. The zero value plus
// Brokers is a plaintext connection without authentication.
type Options struct {
	// Brokers are the bootstrap servers, host:port, comma-separated.
	Brokers string

	// TLS turns TLS on. The files and names below need it.
	TLS bool
	// CAFile holds the PEM certificates to trust instead of the system's
	// roots (Strimzi: the cluster CA's ca.crt). It is read once, by Opts.
	CAFile string
	// CertFile and KeyFile are a PEM client certificate and its key for mTLS
	// (Strimzi: a KafkaUser's user.crt and user.key). They are read at every
	// TLS handshake, so renewed files are used without a restart.
	CertFile string
	KeyFile  string
	// ServerName is the name to verify the brokers' certificates against
	// instead of the host dialled.
	ServerName string
	// InsecureSkipVerify accepts any broker certificate. For testing only:
	// anyone on the path can then read and change the traffic.
	InsecureSkipVerify bool

	// SASLMechanism is none, PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512; empty
	// means none.
	SASLMechanism string
	// SASLUsername is the SASL user (Strimzi: the KafkaUser's name).
	SASLUsername string
	// SASLPassword is the SASL password. BindFlags takes it from the
	// environment only: a flag's value would show in process lists.
	SASLPassword string
	// SASLPasswordFile holds the SASL password instead (Strimzi: the
	// "password" key of the KafkaUser's Secret, mounted as a file). One
	// trailing newline is ignored. The file is read at every
	// authentication, so a rotated password is used without a restart.
	SASLPasswordFile string

	// Rack is where this process runs: its rack or zone, as the brokers
	// name theirs in broker.rack. Brokers with a rack-aware
	// replica.selector.class (KIP-392) then serve its reads from a replica
	// in that rack, so a topic every process reads, such as the trust
	// topic, spreads its readers over its replicas instead of all going
	// to its leader. Empty: every read goes to the leader.
	Rack string

	// envErrs are environment values BindFlags could not parse.
	envErrs []error
	// passwordEnv names the variable BindFlags took SASLPassword from.
	passwordEnv string
}

// BindFlags binds the options to fs as --kafka-* flags. Each flag's default
// comes from the environment variable envPrefix+"KAFKA_…" named in its help
// ("ARGOSY_" gives ARGOSY_KAFKA_BROKERS). The password has no flag; it is
// read from envPrefix+"KAFKA_SASL_PASSWORD" here. Values that do not parse
// are reported by Validate.
func (o *Options) BindFlags(fs *pflag.FlagSet, envPrefix string) {
	o.envErrs = nil
	env := func(name string) (string, string) {
		return os.Getenv(envPrefix + name), " (env " + envPrefix + name + ")"
	}
	str := func(p *string, flag, name, def, usage string) {
		v, help := env(name)
		if v == "" {
			v = def
		}
		fs.StringVar(p, flag, v, usage+help)
	}
	boolean := func(p *bool, flag, name, usage string) {
		v, help := env(name)
		def := false
		if v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				o.envErrs = append(o.envErrs, fmt.Errorf("%s%s: %q is not a boolean", envPrefix, name, v))
			}
			def = b
		}
		fs.BoolVar(p, flag, def, usage+help)
	}
	str(&o.Brokers, "kafka-brokers", "KAFKA_BROKERS", "", "Kafka bootstrap servers, comma-separated host:port")
	boolean(&o.TLS, "kafka-tls", "KAFKA_TLS", "connect to Kafka with TLS")
	str(&o.CAFile, "kafka-ca-file", "KAFKA_CA_FILE", "", "PEM CA certificates to trust for Kafka instead of the system's (Strimzi: the cluster CA's ca.crt)")
	str(&o.CertFile, "kafka-cert-file", "KAFKA_CERT_FILE", "", "PEM client certificate for Kafka mTLS (Strimzi: the KafkaUser's user.crt)")
	str(&o.KeyFile, "kafka-key-file", "KAFKA_KEY_FILE", "", "PEM key of --kafka-cert-file (Strimzi: the KafkaUser's user.key)")
	str(&o.ServerName, "kafka-tls-server-name", "KAFKA_TLS_SERVER_NAME", "", "name to verify Kafka's certificates against instead of the broker host")
	boolean(&o.InsecureSkipVerify, "kafka-tls-insecure-skip-verify", "KAFKA_TLS_INSECURE_SKIP_VERIFY",
		"accept any Kafka broker certificate; for testing only")
	str(&o.SASLMechanism, "kafka-sasl-mechanism", "KAFKA_SASL_MECHANISM", MechanismNone,
		"Kafka SASL mechanism: none, PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
	str(&o.SASLUsername, "kafka-sasl-username", "KAFKA_SASL_USERNAME", "", "Kafka SASL user (Strimzi: the KafkaUser's name)")
	str(&o.SASLPasswordFile, "kafka-sasl-password-file", "KAFKA_SASL_PASSWORD_FILE", "",
		"file holding the Kafka SASL password, instead of "+envPrefix+"KAFKA_SASL_PASSWORD (Strimzi: the KafkaUser Secret's password key)")
	str(&o.Rack, "kafka-rack", "KAFKA_RACK", "",
		"rack or zone this process runs in, as brokers name theirs in broker.rack: brokers with a rack-aware replica.selector.class serve its reads from a replica there")
	o.passwordEnv = envPrefix + "KAFKA_SASL_PASSWORD"
	o.SASLPassword = os.Getenv(o.passwordEnv)
}

// SeedBrokers returns Brokers split at commas, with spaces trimmed.
func (o *Options) SeedBrokers() []string {
	var seeds []string
	for s := range strings.SplitSeq(o.Brokers, ",") {
		seeds = append(seeds, strings.TrimSpace(s))
	}
	return seeds
}

// mechanism returns the SASL mechanism in canonical form, "" for none, and
// whether it is known.
func (o *Options) mechanism() (string, bool) {
	switch m := strings.ToUpper(strings.TrimSpace(o.SASLMechanism)); m {
	case "", strings.ToUpper(MechanismNone):
		return "", true
	case MechanismPlain, MechanismSCRAMSHA256, MechanismSCRAMSHA512:
		return m, true
	default:
		return m, false
	}
}

// ErrNoBrokers is Validate's error when no bootstrap server is given.
var ErrNoBrokers = errors.New("--kafka-brokers is required")

// Validate reports every problem with the options at once: missing or
// contradictory settings, and files that cannot be read or parsed.
func (o *Options) Validate() error {
	errs := append([]error{}, o.envErrs...)
	switch {
	case strings.TrimSpace(o.Brokers) == "":
		errs = append(errs, ErrNoBrokers)
	case slices.Contains(o.SeedBrokers(), ""):
		errs = append(errs, fmt.Errorf("--kafka-brokers %q has an empty entry", o.Brokers))
	}
	errs = append(errs, o.validateTLS()...)
	errs = append(errs, o.validateSASL()...)
	return errors.Join(errs...)
}

func (o *Options) validateTLS() []error {
	var errs []error
	if !o.TLS {
		for _, f := range []struct{ flag, value string }{
			{"--kafka-ca-file", o.CAFile}, {"--kafka-cert-file", o.CertFile}, {"--kafka-key-file", o.KeyFile},
			{"--kafka-tls-server-name", o.ServerName},
		} {
			if f.value != "" {
				errs = append(errs, fmt.Errorf("%s needs --kafka-tls", f.flag))
			}
		}
		if o.InsecureSkipVerify {
			errs = append(errs, errors.New("--kafka-tls-insecure-skip-verify needs --kafka-tls"))
		}
	}
	if o.InsecureSkipVerify && o.CAFile != "" {
		errs = append(errs, errors.New("--kafka-tls-insecure-skip-verify skips the check --kafka-ca-file is for; set one of them"))
	}
	if o.CAFile != "" {
		if _, err := o.rootCAs(); err != nil {
			errs = append(errs, err)
		}
	}
	switch {
	case o.CertFile != "" && o.KeyFile == "":
		errs = append(errs, errors.New("--kafka-cert-file needs --kafka-key-file"))
	case o.CertFile == "" && o.KeyFile != "":
		errs = append(errs, errors.New("--kafka-key-file needs --kafka-cert-file"))
	case o.CertFile != "":
		if _, err := o.clientCert(); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

func (o *Options) validateSASL() []error {
	mech, known := o.mechanism()
	if !known {
		return []error{fmt.Errorf("--kafka-sasl-mechanism %q is not one of none, PLAIN, SCRAM-SHA-256, SCRAM-SHA-512", o.SASLMechanism)}
	}
	if mech == "" {
		if o.SASLUsername != "" || o.SASLPassword != "" || o.SASLPasswordFile != "" {
			return []error{errors.New("a Kafka SASL user or password needs --kafka-sasl-mechanism")}
		}
		return nil
	}
	var errs []error
	if o.SASLUsername == "" {
		errs = append(errs, errors.New("--kafka-sasl-mechanism needs --kafka-sasl-username"))
	}
	env := o.passwordEnv
	if env == "" {
		env = "the environment"
	}
	switch {
	case o.SASLPassword != "" && o.SASLPasswordFile != "":
		errs = append(errs, fmt.Errorf("the Kafka SASL password is set both by %s and by --kafka-sasl-password-file; set one", env))
	case o.SASLPassword == "" && o.SASLPasswordFile == "":
		errs = append(errs, fmt.Errorf("--kafka-sasl-mechanism needs a password: --kafka-sasl-password-file or %s", env))
	case o.SASLPasswordFile != "":
		if _, err := o.password(); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// Opts validates the options and returns the client options that apply
// them: SeedBrokers, and DialTLSConfig, SASL and Rack when they are on. The
// client options keep a copy of o: later changes to o do not reach them.
func (o *Options) Opts() ([]kgo.Opt, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	c := *o
	o = &c
	opts := []kgo.Opt{kgo.SeedBrokers(o.SeedBrokers()...)}
	if o.TLS {
		cfg, err := o.tlsConfig()
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	if m := o.saslMechanism(); m != nil {
		opts = append(opts, kgo.SASL(m))
	}
	if o.Rack != "" {
		opts = append(opts, kgo.Rack(o.Rack))
	}
	return opts, nil
}

func (o *Options) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         o.ServerName,
		InsecureSkipVerify: o.InsecureSkipVerify, // documented as for testing only
	}
	if o.CAFile != "" {
		roots, err := o.rootCAs()
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = roots
	}
	if o.CertFile != "" {
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return o.clientCert()
		}
	}
	return cfg, nil
}

func (o *Options) rootCAs() (*x509.CertPool, error) {
	pem, err := os.ReadFile(o.CAFile)
	if err != nil {
		return nil, fmt.Errorf("--kafka-ca-file: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--kafka-ca-file %s: no PEM certificate in it", o.CAFile)
	}
	return roots, nil
}

func (o *Options) clientCert() (*tls.Certificate, error) {
	c, err := tls.LoadX509KeyPair(o.CertFile, o.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("--kafka-cert-file and --kafka-key-file: %w", err)
	}
	return &c, nil
}

// password returns the SASL password, reading SASLPasswordFile if it is set.
func (o *Options) password() (string, error) {
	if o.SASLPasswordFile == "" {
		return o.SASLPassword, nil
	}
	b, err := os.ReadFile(o.SASLPasswordFile)
	if err != nil {
		return "", fmt.Errorf("--kafka-sasl-password-file: %w", err)
	}
	b = bytes.TrimSuffix(bytes.TrimSuffix(b, []byte("\n")), []byte("\r"))
	if len(b) == 0 {
		return "", fmt.Errorf("--kafka-sasl-password-file %s is empty", o.SASLPasswordFile)
	}
	return string(b), nil
}

// saslMechanism returns the SASL mechanism, or nil for none. It reads the
// password at every authentication.
func (o *Options) saslMechanism() sasl.Mechanism {
	user := o.SASLUsername
	switch m, _ := o.mechanism(); m {
	case MechanismPlain:
		return plain.Plain(func(context.Context) (plain.Auth, error) {
			pass, err := o.password()
			return plain.Auth{User: user, Pass: pass}, err
		})
	case MechanismSCRAMSHA256, MechanismSCRAMSHA512:
		auth := func(context.Context) (scram.Auth, error) {
			pass, err := o.password()
			return scram.Auth{User: user, Pass: pass}, err
		}
		if m == MechanismSCRAMSHA256 {
			return scram.Sha256(auth)
		}
		return scram.Sha512(auth)
	}
	return nil
}
