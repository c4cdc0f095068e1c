package nodetest

import (
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"
)

// Changing a running cluster's members: restart after a lost disk, a
// clean stop, and a cut as a crash would leave it.

// Restart stops member i and starts it again with the same identity but a
// fresh (empty) store, as after a crash that lost the disk. On mocknet it
// keeps its address; on a real transport it listens on a new port.
func (c *Cluster) Restart(i int) error {
	m := c.Members[i]
	id := m.Node.ID()
	if err := m.stop(); err != nil {
		return fmt.Errorf("restart member %d: stop: %w", i, err)
	}
	if m.real {
		if err := newNode(nil, m); err != nil {
			return fmt.Errorf("restart member %d: %w", i, err)
		}
		m.start()
		return nil
	}
	for _, o := range c.Members {
		if o != m {
			_ = c.Net.UnlinkPeers(id, o.Node.ID())
		}
	}
	if err := newNode(c.Net, m); err != nil {
		return fmt.Errorf("restart member %d: %w", i, err)
	}
	for _, o := range c.Members {
		if o != m {
			if o.host != nil {
				o.host.setCut(id, false) // a cut member restarted is reachable again
			}
			if _, err := c.Net.LinkPeers(id, o.Node.ID()); err != nil {
				return fmt.Errorf("restart member %d: link: %w", i, err)
			}
		}
	}
	m.start()
	return nil
}

// Stop stops member i as an operator would (its Run ends, then Close):
// a provider withdraws its offer on the way out. On mocknet its links go
// too, as a stopped process's sockets do (a closed mocknet host leaves
// the other end of its connections open). The member stays in Members,
// stopped.
func (c *Cluster) Stop(i int) error {
	m := c.Members[i]
	id := m.Node.ID()
	if err := m.stop(); err != nil {
		return fmt.Errorf("stop member %d: %w", i, err)
	}
	if !m.real {
		c.unlink(m, id)
	}
	return nil
}

// Cut takes member i off the network without a word, as a crash or a
// lost link does: every link to it is removed and its connections are
// closed, while the node itself runs on alone until Close. Mocknet
// clusters only.
//
// Its host and every other member's refuse streams between them first:
// closing the connections alone let a stream opened during the close
// outlive them on mocknet (limitedHost.NewStream), and the cut member's
// gossip went on reaching the others through it.
func (c *Cluster) Cut(i int) error {
	m := c.Members[i]
	if m.real {
		return fmt.Errorf("cut member %d: not supported on real transports", i)
	}
	id := m.Node.ID()
	for _, o := range c.Members {
		if o != m && o.host != nil {
			m.host.setCut(o.host.ID(), true)
			o.host.setCut(id, true)
		}
	}
	c.unlink(m, id)
	return nil
}

// unlink removes every mocknet link of member m (peer id) and closes its
// connections.
func (c *Cluster) unlink(m *Member, id peer.ID) {
	for _, o := range c.Members {
		if o != m && o.Node != nil {
			_ = c.Net.UnlinkPeers(id, o.Node.ID())
			_ = c.Net.DisconnectPeers(id, o.Node.ID())
		}
	}
}
