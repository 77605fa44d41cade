package failover

import (
	"time"

	"github.com/shoal-db/shoal/slots"
)

// Node is what the machine needs to know about one cluster node, as the
// cluster state (package gossip) sees it right now.
type Node struct {
	ID          string
	IsMaster    bool
	IsReplica   bool
	MasterID    string // a replica's master, "" when unknown or a master
	PFail, Fail bool
	NoFailover  bool
	NumSlots    int
	ConfigEpoch uint64
	// ReplOffset is the replication offset the node last announced (this
	// node's own for myself).
	ReplOffset int64
	// MigrateTo is Redis's MIGRATE_TO flag: the master has (or used to
	// have) replicas, so an orphaned one deserves a migrated replica.
	MigrateTo bool
	// Replicas are the ids of the node's replicas.
	Replicas []string
	// LastSeen is when any bus data last arrived from the node (zero:
	// never).
	LastSeen time.Time
	// ReplDataAge (myself only, when ReplDataAgeKnown) is how old this
	// replica's data is by its replication link: since the last byte from
	// the master while the link is up, else since the link went down.
	// Unknown, the data age falls back to the master's LastSeen.
	ReplDataAge      time.Duration
	ReplDataAgeKnown bool
	// DataLost: the node's last bus message said it restarted as a master
	// without its data and waits for a replica to take over (datalost.go).
	DataLost bool
	// LoadedData: the node restarted from its own data set file with keys
	// and has not synced from a master since (its replication offset is 0
	// then, yet it holds data: datalost.go).
	LoadedData bool
}

// View is the read-only cluster state the machine decides on. It is
// implemented by the gossip State (and by fakes in tests); the machine
// calls it only during an event, keeps nothing it returns past the event
// (AppendNodes fills a buffer the machine reuses), and never changes
// anything through it: changes are Actions.
type View interface {
	Myself() Node
	Node(id string) (Node, bool)
	// AppendNodes appends every known node (handshake nodes excluded) to
	// dst[:0] in a deterministic order and returns it. It may reuse the
	// Replicas arrays of dst's old elements up to its capacity: the machine
	// hands back its buffer of the last tick, so a cron tick allocates
	// nothing once the cluster's shape is known.
	AppendNodes(dst []Node) []Node
	CurrentEpoch() uint64
	LastVoteEpoch() uint64
	// MaxConfigEpoch is the greatest configEpoch known, currentEpoch included
	// (clusterGetMaxEpoch).
	MaxConfigEpoch() uint64
	// Size is the number of masters serving at least one slot.
	Size() int
	// StateOK is cluster_state:ok.
	StateOK() bool
	// SlotOwnerEpoch is the configEpoch of slot's current owner; false when
	// the slot is unclaimed (no owner, or an owner that stopped claiming it).
	SlotOwnerEpoch(slot int) (uint64, bool)
}

// MsgKind is the kind of a failover message received from another node.
type MsgKind uint8

const (
	// MsgAuthRequest is FAILOVER_AUTH_REQUEST: a replica asks for a vote.
	MsgAuthRequest MsgKind = iota + 1
	// MsgAuthAck is FAILOVER_AUTH_ACK: a master granted its vote.
	MsgAuthAck
	// MsgMFStart is MFSTART: my replica starts a manual failover.
	MsgMFStart
	// MsgMasterPaused is any packet from my master flagged PAUSED: it paused
	// its writers for my manual failover and announces its final offset.
	MsgMasterPaused
)

func (k MsgKind) String() string {
	switch k {
	case MsgAuthRequest:
		return "auth-request"
	case MsgAuthAck:
		return "auth-ack"
	case MsgMFStart:
		return "mfstart"
	case MsgMasterPaused:
		return "master-paused"
	}
	return "unknown"
}

// Message is a received failover message, taken from the bus header after
// the cluster state processed it (so the View already reflects the
// sender's epochs).
type Message struct {
	Kind MsgKind
	From string
	// CurrentEpoch and ConfigEpoch are the sender's header epochs; for a
	// replica ConfigEpoch is its master's.
	CurrentEpoch, ConfigEpoch uint64
	// Slots are the slots the sender claims (its master's for a replica).
	Slots *slots.Bitmap
	// ForceAck is the FORCEACK flag of a manual failover's vote request.
	ForceAck bool
	// Offset is the sender's replication offset.
	Offset int64
}

// ActionKind says what an Action asks the cluster state to do.
type ActionKind uint8

const (
	// ActSetCurrentEpoch: currentEpoch = Epoch, saved and fsynced before
	// any later action's message leaves.
	ActSetCurrentEpoch ActionKind = iota + 1
	// ActRecordVote: lastVoteEpoch = Epoch (a vote for Node), saved and
	// fsynced before the ACK that follows leaves.
	ActRecordVote
	// ActSendAuthAck: send FAILOVER_AUTH_ACK to Node (reliable).
	ActSendAuthAck
	// ActRequestVotes: send FAILOVER_AUTH_REQUEST for Epoch to every master
	// (reliable), with FORCEACK when ForceAck.
	ActRequestVotes
	// ActPromote: myself becomes a master with configEpoch Epoch (when
	// greater than its own), takes every slot of its old master, saves and
	// fsyncs, and broadcasts a PONG to everyone.
	ActPromote
	// ActPongSiblings: send a PONG to the other replicas of my master (they
	// learn my offset before ranking).
	ActPongSiblings
	// ActSendMFStart: send MFSTART to Node, my master (reliable).
	ActSendMFStart
	// ActPauseWrites: stop accepting writes for Duration (CLIENT PAUSE
	// WRITE), for a manual failover.
	ActPauseWrites
	// ActResumeWrites: end that pause.
	ActResumeWrites
	// ActPingPaused: send a PING flagged PAUSED to Node, the replica doing
	// a manual failover (it carries my replication offset).
	ActPingPaused
	// ActReplicate: become a replica of Node (replica migration).
	ActReplicate
	// ActDataLostEnded: this master, restarted without its data, stops
	// waiting for a replica to take over (DataLost turned false): it serves
	// its slots again, or is a replica by now.
	ActDataLostEnded
)

func (k ActionKind) String() string {
	switch k {
	case ActSetCurrentEpoch:
		return "set-current-epoch"
	case ActRecordVote:
		return "record-vote"
	case ActSendAuthAck:
		return "send-auth-ack"
	case ActRequestVotes:
		return "request-votes"
	case ActPromote:
		return "promote"
	case ActPongSiblings:
		return "pong-siblings"
	case ActSendMFStart:
		return "send-mfstart"
	case ActPauseWrites:
		return "pause-writes"
	case ActResumeWrites:
		return "resume-writes"
	case ActPingPaused:
		return "ping-paused"
	case ActReplicate:
		return "replicate"
	case ActDataLostEnded:
		return "data-lost-ended"
	}
	return "unknown"
}

// Action is one thing the machine asks the cluster state to do. Actions
// are returned in the order they must be carried out; epochs and votes come
// before the messages that depend on them.
type Action struct {
	Kind     ActionKind
	Node     string
	Epoch    uint64
	ForceAck bool
	Duration time.Duration
}

// Mode is the variant of CLUSTER FAILOVER.
type Mode uint8

const (
	// ModeDefault is CLUSTER FAILOVER: the master pauses, the replica
	// catches up, then an election with FORCEACK.
	ModeDefault Mode = iota
	// ModeForce is CLUSTER FAILOVER FORCE: no handshake with the master,
	// an election with FORCEACK at once.
	ModeForce
	// ModeTakeover is CLUSTER FAILOVER TAKEOVER: a new configEpoch without
	// any vote.
	ModeTakeover
)
