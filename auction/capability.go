package auction

import (
	"fmt"
	"slices"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/ipfs/go-cid"
	mh "github.com/multiformats/go-multihash"
)

// Capability string prefixes. The strings are hashed into CIDs and
// announced with the DHT's Provide, so their exact bytes are protocol.
const (
	capPrefix        = "idlegrid:"
	CapabilityGPU    = capPrefix + "gpu:"     // + model slug
	CapabilityVRAM   = capPrefix + "vram:"    // + class in GB
	CapabilityRegion = capPrefix + "region:"  // + country code
	CapabilityRT     = capPrefix + "runtime:" // + runtime name
	// CapabilityProvider is announced by every provider, so a renter can
	// list the whole market when a query pins no announced capability.
	CapabilityProvider = capPrefix + "provider"
)

// VRAMClassesGB are the VRAM capability classes, in vendor gigabytes
// (10^9 bytes). A GPU is in class N when its reported memory is at least
// N×10^9 bytes. Vendors label cards in these units and NVML reports
// slightly less than the binary size (an "80GB" H100 reports 81559 MiB,
// 79.6 GiB; an "48GB" L40S 46068 MiB), so decimal classes put every card in
// the class printed on its box.
var VRAMClassesGB = []uint64{8, 16, 24, 32, 40, 48, 80, 96, 141, 192}

// VRAMClasses returns every class a GPU with vramMiB belongs to, ascending.
// A provider announces all of them, so a renter looking for "at least 48 GB"
// queries one key, idlegrid:vram:48, and finds 80 GB hosts too.
func VRAMClasses(vramMiB uint64) []uint64 {
	var out []uint64
	for _, gb := range VRAMClassesGB {
		// Compare in MiB, rounding the threshold up, so no shift can overflow.
		if vramMiB >= (gb*1_000_000_000+(1<<20)-1)>>20 {
			out = append(out, gb)
		}
	}
	return out
}

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

// CapabilityStrings returns the canonical capability strings of c, sorted
// and without duplicates: the provider key, each GPU model, each VRAM class
// any GPU reaches, the region's country and each runtime.
func CapabilityStrings(c *Capacity) []string {
	out := []string{CapabilityProvider}
	for _, g := range c.GPUs {
		out = append(out, CapabilityGPU+g.Model)
		for _, cl := range VRAMClasses(g.VRAMMiB) {
			out = append(out, fmt.Sprintf("%s%d", CapabilityVRAM, cl))
		}
	}
	if c.Region.Country != "" {
		out = append(out, CapabilityRegion+c.Region.Country)
	}
	for _, rt := range c.Runtimes {
		out = append(out, CapabilityRT+rt)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// CapabilityKeys returns the CIDs c's provider should announce: the CID of
// every capability string, then the dataset CIDs as they are (a renter
// finds cached data under the data's own CID). Datasets that do not parse
// are skipped; OpenCapacity has already refused records with such entries.
func CapabilityKeys(c *Capacity) []cid.Cid {
	strs := CapabilityStrings(c)
	out := make([]cid.Cid, 0, len(strs)+len(c.Datasets))
	for _, s := range strs {
		out = append(out, CapabilityCID(s))
	}
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
