package auction

import (
	"fmt"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/ipfs/go-cid"
	mh "github.com/multiformats/go-multihash"
)

// CapabilityProvider is the one capability string every provider
// announces with the DHT's Provide, so a renter can list the whole market.
// Its exact bytes are protocol.
//
// Providers once also announced a key per GPU model, VRAM class, region
// and runtime. No release ever looked one up (renters filter the records
// they fetch, and shard gossip carries the per-family view), yet each was a
// DHT lookup and up to 20 ADD_PROVIDER dials per provider per republish:
// two thirds of a provider's DHT writes, and at a few hundred nodes the
// dials that made every node connect to every other.
const CapabilityProvider = "idlegrid:provider"

// CapabilityCID is the CIDv1 (raw codec, sha2-256) of a canonical
// capability string. Its multihash is 34 bytes, well inside the 80-byte
// provider-key limit of kad-dht.
func CapabilityCID(s string) cid.Cid {
	sum, err := mh.Sum([]byte(s), mh.SHA2_256, -1)
	if err != nil {
		// sha2-256 with the default length cannot fail.
		panic(fmt.Sprintf("auction.CapabilityCID: %v", err))
	}
	return cid.NewCidV1(cid.Raw, sum)
}

// CapabilityKeys returns the CIDs c's provider announces: the provider
// key, then its dataset CIDs as they are (a renter finds who caches data
// under the data's own CID). Datasets that do not parse are skipped;
// OpenCapacity has already refused records with such entries.
func CapabilityKeys(c *Capacity) []cid.Cid {
	out := make([]cid.Cid, 0, 1+len(c.Datasets))
	out = append(out, CapabilityCID(CapabilityProvider))
	seen := map[cid.Cid]bool{}
	for _, d := range c.Datasets {
		k, err := cid.Decode(d)
		if err != nil || len(k.Hash()) > attest.MaxCIDHashLen || seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, k)
	}
	return out
}
