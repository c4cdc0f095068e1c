package reputation

// Badge is a provider's standing: score and volume together. Higher
// badges open dearer tiers of work ([Badge.Allows]).
type Badge int8

// Badge levels, lowest first. The zero value is BadgeNone.
const (
	BadgeRevoked Badge = iota - 1 // a fraud proof is in force: no work at all
	BadgeNone                     // not enough evidence yet, or a poor score
	BadgeBronze
	BadgeSilver
	BadgeGold
)

func (b Badge) String() string {
	switch b {
	case BadgeRevoked:
		return "revoked"
	case BadgeNone:
		return "none"
	case BadgeBronze:
		return "bronze"
	case BadgeSilver:
		return "silver"
	case BadgeGold:
		return "gold"
	}
	return "unknown"
}

// Required returns the badge work of a tier needs: gold needs
// [BadgeGold]; silver and bronze need none ([BadgeNone]), so a provider
// without history can win them and build one. ok is false for an unknown
// tier. Tiers are the auction's tier names ("gold", "silver", "bronze").
func Required(tier string) (b Badge, ok bool) {
	switch tier {
	case "gold":
		return BadgeGold, true
	case "silver", "bronze":
		return BadgeNone, true
	}
	return BadgeNone, false
}

// Allows reports whether a provider holding b may take work of the tier:
// b is at least [Required](tier). Unknown tiers and [BadgeRevoked] allow
// nothing. Badges gate tiers; the score itself ranks bids and meets the
// RFQ's minimum reliability.
func (b Badge) Allows(tier string) bool {
	need, ok := Required(tier)
	return ok && b != BadgeRevoked && b >= need
}

// badgeFor is the highest level whose threshold score and volume meet.
func (c Config) badgeFor(score, gpuHours float64) Badge {
	for _, l := range []struct {
		b Badge
		t Threshold
	}{{BadgeGold, c.Gold}, {BadgeSilver, c.Silver}, {BadgeBronze, c.Bronze}} {
		if score >= l.t.Score && gpuHours >= l.t.GPUHours {
			return l.b
		}
	}
	return BadgeNone
}
