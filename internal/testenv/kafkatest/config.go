package kafkatest

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Listener is a broker listener, named after its Kafka security protocol.
type Listener string

// The listeners a test broker can have. Every broker has Plaintext, at Addr;
// WithListeners adds the others.
const (
	// Plaintext has neither TLS nor authentication.
	Plaintext Listener = "PLAINTEXT"
	// SSL is TLS that requires a client certificate signed by the broker's
	// CA (mTLS), like a Strimzi listener with authentication type tls.
	SSL Listener = "SSL"
	// SASLSSL is TLS without client certificates, then SASL: SCRAM-SHA-512
	// (as a Strimzi listener with authentication type scram-sha-512),
	// SCRAM-SHA-256 or PLAIN.
	SASLSSL Listener = "SASL_SSL"
	// SASLPlaintext is SASL as on SASLSSL, without TLS.
	SASLPlaintext Listener = "SASL_PLAINTEXT"
)

// Option configures a broker that Start or StartBroker starts.
type Option func(*config)

// WithListeners gives the broker the listeners ls besides PLAINTEXT, each on
// a free port of 127.0.0.1. A TLS listener makes the broker a PKI.
func WithListeners(ls ...Listener) Option {
	return func(c *config) {
		for _, l := range ls {
			if !slices.Contains(c.listeners, l) {
				c.listeners = append(c.listeners, l)
			}
		}
	}
}

// WithUser creates a SASL user: SCRAM-SHA-256 and SCRAM-SHA-512 credentials,
// written into the metadata log when the storage is formatted (kafka-storage
// format --add-scram), and a PLAIN password. Names and passwords are letters,
// digits, '.', '_' and '-'.
func WithUser(name, password string) Option {
	return func(c *config) { c.users = append(c.users, user{name, password}) }
}

// WithAuthorizer turns on ACLs (Kafka's StandardAuthorizer): a principal
// may do only what an ACL allows it. The PLAINTEXT listener's principal,
// User:ANONYMOUS, is a super user, so the broker's own traffic and a test's
// administration pass; SASL users are User:<name>.
func WithAuthorizer() Option {
	return func(c *config) { c.authorizer = true }
}

type config struct {
	listeners  []Listener
	users      []user
	authorizer bool
}

type user struct{ name, password string }

// safe are the characters that need no quoting in --add-scram's argument
// or a JAAS option.
var safe = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

func (c *config) validate() error {
	var errs []error
	for _, l := range c.listeners {
		switch l {
		case Plaintext, SSL, SASLSSL, SASLPlaintext:
		default:
			errs = append(errs, fmt.Errorf("kafkatest: unknown listener %q", l))
		}
	}
	for _, u := range c.users {
		if !safe.MatchString(u.name) || !safe.MatchString(u.password) {
			errs = append(errs, fmt.Errorf("kafkatest: user %q: names and passwords are letters, digits, '.', '_' and '-'", u.name))
		}
	}
	return errors.Join(errs...)
}

// extra returns the listeners besides PLAINTEXT.
func (c *config) extra() []Listener {
	return slices.DeleteFunc(slices.Clone(c.listeners), func(l Listener) bool { return l == Plaintext })
}

func (c *config) tls() bool {
	return slices.Contains(c.listeners, SSL) || slices.Contains(c.listeners, SASLSSL)
}

func (c *config) sasl() bool {
	return slices.Contains(c.listeners, SASLSSL) || slices.Contains(c.listeners, SASLPlaintext)
}

// scramArgs are kafka-storage format's arguments that create the users'
// SCRAM credentials.
func (c *config) scramArgs() []string {
	var args []string
	for _, u := range c.users {
		for _, m := range []string{"SCRAM-SHA-256", "SCRAM-SHA-512"} {
			args = append(args, "--add-scram", fmt.Sprintf("%s=[name=%s,password=%s]", m, u.name, u.password))
		}
	}
	return args
}

// optionalProps are the properties of node n's rack, TLS and authorizer,
// when it has them.
func optionalProps(b *Broker, c *config, n node) [][2]string {
	var out [][2]string
	if n.rack != "" {
		out = append(out, [][2]string{
			{"broker.rack", n.rack},
			{"replica.selector.class", "org.apache.kafka.common.replica.RackAwareReplicaSelector"},
		}...)
	}
	if c.tls() {
		out = append(out, [][2]string{
			{"ssl.keystore.type", "PEM"},
			{"ssl.keystore.location", b.PKI.ServerKeyStore},
			{"ssl.truststore.type", "PEM"},
			{"ssl.truststore.location", b.PKI.CAFile},
			{"listener.name.ssl.ssl.client.auth", "required"},
		}...)
	}
	if c.authorizer {
		out = append(out, [][2]string{
			{"authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer"},
			{"super.users", "User:ANONYMOUS"},
			{"allow.everyone.if.no.acl.found", "false"},
		}...)
	}
	return out
}

// serverProperties is the configuration of broker b, node n of its
// cluster. The PLAINTEXT listener carries the traffic between brokers and
// controller. Node 1 is the cluster's one controller, and a broker too.
func serverProperties(b *Broker, c *config, n node, data string) []byte {
	listeners := []string{"PLAINTEXT://" + b.Addr}
	for _, l := range c.extra() {
		listeners = append(listeners, fmt.Sprintf("%s://%s", l, b.listeners[l]))
	}
	roles, own := "broker,controller", append(slices.Clone(listeners), fmt.Sprintf("CONTROLLER://127.0.0.1:%d", n.ctrlPort))
	if n.brokerOnly {
		roles, own = "broker", listeners
	}
	kvs := [][2]string{
		{"process.roles", roles},
		{"node.id", strconv.Itoa(n.id)},
		{"controller.quorum.voters", fmt.Sprintf("1@127.0.0.1:%d", n.ctrlPort)},
		{"listeners", strings.Join(own, ",")},
		{"advertised.listeners", strings.Join(listeners, ",")},
		{"controller.listener.names", "CONTROLLER"},
		{"inter.broker.listener.name", "PLAINTEXT"},
		{"listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"},
		{"log.dirs", data},
		{"num.partitions", "1"},
		{"auto.create.topics.enable", "false"},
		{"offsets.topic.replication.factor", "1"},
		{"offsets.topic.num.partitions", "4"},
		{"transaction.state.log.replication.factor", "1"},
		{"transaction.state.log.min.isr", "1"},
		{"transaction.state.log.num.partitions", "4"},
		{"share.coordinator.state.topic.replication.factor", "1"},
		{"share.coordinator.state.topic.min.isr", "1"},
		{"group.initial.rebalance.delay.ms", "0"},
		{"num.network.threads", "2"},
		// A fleet of agents connecting at once (starting, or after a
		// broker's restart) overflows Kafka's default listen queue of 50,
		// and the kernel drops the connection attempts past it: clients
		// then time out dialling, try again, and add to the load.
		{"socket.listen.backlog.size", "4096"},
		{"num.io.threads", "4"},
	}
	kvs = append(kvs, optionalProps(b, c, n)...)
	if c.sasl() {
		kvs = append(kvs, [2]string{"sasl.enabled.mechanisms", "SCRAM-SHA-512,SCRAM-SHA-256,PLAIN"})
		var plain strings.Builder
		plain.WriteString("org.apache.kafka.common.security.plain.PlainLoginModule required")
		for _, u := range c.users {
			fmt.Fprintf(&plain, ` user_%s="%s"`, u.name, u.password)
		}
		plain.WriteString(";")
		for _, l := range []Listener{SASLSSL, SASLPlaintext} {
			if !slices.Contains(c.listeners, l) {
				continue
			}
			prefix := "listener.name." + strings.ToLower(string(l)) + "."
			kvs = append(kvs, [][2]string{
				{prefix + "scram-sha-256.sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required;"},
				{prefix + "scram-sha-512.sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required;"},
				{prefix + "plain.sasl.jaas.config", plain.String()},
			}...)
		}
	}
	var buf bytes.Buffer
	for _, kv := range kvs {
		fmt.Fprintf(&buf, "%s=%s\n", kv[0], kv[1])
	}
	return buf.Bytes()
}
