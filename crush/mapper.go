package crush

import "math"

// This file is the CRUSH mapping algorithm as Ceph implements it
// (src/crush/mapper.c; Weil et al., "CRUSH: Controlled, Scalable,
// Decentralized Placement of Replicated Data", SC'06), kept step for step so
// that the same map, rule and input give the same devices as Ceph. It is
// pure: no I/O, no clock, no shared mutable state.

// permChoose is bucket_perm_choose: the r-th element of a pseudo-random
// permutation of the bucket's items seeded by x. Ceph caches the partial
// permutation per (bucket, x) within one mapping; recomputing it gives the
// same element.
func (b *Bucket) permChoose(x uint32, r int) int32 {
	size := len(b.Items)
	pr := uint32(r) % uint32(size)
	if pr == 0 {
		s := Hash32_3(x, uint32(b.ID), 0) % uint32(size)
		return b.Items[s]
	}
	var small [16]uint32
	var perm []uint32
	if size <= len(small) {
		perm = small[:size]
	} else {
		perm = make([]uint32, size)
	}
	for i := range perm {
		perm[i] = uint32(i)
	}
	for p := uint32(0); p <= pr; p++ {
		if p < uint32(size)-1 {
			i := Hash32_3(x, uint32(b.ID), p) % (uint32(size) - p)
			if i != 0 {
				perm[p+i], perm[p] = perm[p], perm[p+i]
			}
		}
	}
	return b.Items[perm[pr]]
}

func (b *Bucket) listChoose(x uint32, r int) int32 {
	for i := len(b.Items) - 1; i >= 0; i-- {
		w := uint64(Hash32_4(x, uint32(b.Items[i]), uint32(r), uint32(b.ID)))
		w &= 0xffff
		w *= uint64(b.sumWeights[i])
		w >>= 16
		if w < uint64(b.ItemWeights[i]) {
			return b.Items[i]
		}
	}
	return b.Items[0]
}

func (b *Bucket) treeChoose(x uint32, r int) int32 {
	n := len(b.nodeWeights) >> 1
	for n&1 == 0 {
		w := uint64(b.nodeWeights[n])
		t := (uint64(Hash32_4(x, uint32(n), uint32(r), uint32(b.ID))) * w) >> 32
		h := treeHeight(n)
		l := n - (1 << (h - 1))
		if t < uint64(b.nodeWeights[l]) {
			n = l
		} else {
			n = n + (1 << (h - 1))
		}
	}
	// A tree whose weights are all zero descends right past the last item;
	// Ceph reads beyond its array there (undefined). Stay in bounds.
	if n>>1 >= len(b.Items) {
		return b.Items[len(b.Items)-1]
	}
	return b.Items[n>>1]
}

func (b *Bucket) strawChoose(x uint32, r int) int32 {
	high := 0
	var highDraw uint64
	for i, item := range b.Items {
		draw := uint64(Hash32_3(x, uint32(item), uint32(r))) & 0xffff
		draw *= uint64(b.straws[i])
		if i == 0 || draw > highDraw {
			high, highDraw = i, draw
		}
	}
	return b.Items[high]
}

// straw2Choose draws ln(u)/weight for every item and takes the largest
// (an exponential race: each item wins in proportion to its weight, and
// changing one weight only moves data to or from that item).
func (b *Bucket) straw2Choose(x uint32, r int) int32 {
	high := 0
	var highDraw int64
	for i, item := range b.Items {
		w := b.ItemWeights[i]
		var draw int64
		if w != 0 {
			u := Hash32_3(x, uint32(item), uint32(r)) & 0xffff
			ln := int64(crushLn(u)) - 0x1000000000000
			draw = ln / int64(w)
		} else {
			draw = math.MinInt64
		}
		if i == 0 || draw > highDraw {
			high, highDraw = i, draw
		}
	}
	return b.Items[high]
}

func (b *Bucket) choose(x uint32, r int) int32 {
	switch b.Alg {
	case AlgUniform:
		return b.permChoose(x, r)
	case AlgList:
		return b.listChoose(x, r)
	case AlgTree:
		return b.treeChoose(x, r)
	case AlgStraw:
		return b.strawChoose(x, r)
	case AlgStraw2:
		return b.straw2Choose(x, r)
	}
	return b.Items[0]
}

// isOut is Ceph's probabilistic reweight test: a device with reweight w in
// [0, 0x10000] keeps a fraction w/0x10000 of the inputs that reach it. A
// bucket whose type is 0 reaches it as a leaf; it has no reweight and is
// never out (Ceph indexes the weights with its negative id there).
func isOut(weights []uint32, item int32, x uint32) bool {
	if item < 0 {
		return false
	}
	if int(item) >= len(weights) {
		return true
	}
	w := weights[item]
	if w >= WeightOne {
		return false
	}
	if w == 0 {
		return true
	}
	return Hash32_2(x, uint32(item))&0xffff >= w
}

type chooseArgs struct {
	weights          []uint32
	x                uint32
	localRetries     uint32
	localFallbackTry uint32
	varyR            uint32
	stable           uint32
}

// chooseFirstN is crush_choose_firstn: depth-first selection of numrep
// distinct items of the given type, retrying on collision, rejection by
// reweight or an empty subtree.
func (m *Map) chooseFirstN(a *chooseArgs, bucket *Bucket, numrep int, typ int32,
	out []int32, outpos int, outSize int, tries, recurseTries uint32,
	recurseToLeaf bool, out2 []int32, parentR int) int {
	count := outSize
	rep := outpos
	if a.stable != 0 {
		rep = 0
	}
	var item int32
	for ; rep < numrep && count > 0; rep++ {
		ftotal := uint32(0)
		skipRep := false
		for {
			retryDescent := false
			in := bucket
			flocal := uint32(0)
			for {
				collide := false
				retryBucket := false
				r := rep + parentR + int(ftotal)
				reject := false
				var itemtype int32
				if len(in.Items) == 0 {
					reject = true
				} else {
					if a.localFallbackTry > 0 && flocal >= uint32(len(in.Items)>>1) && flocal > a.localFallbackTry {
						item = in.permChoose(a.x, r)
					} else {
						item = in.choose(a.x, r)
					}
					if item >= m.maxDevices {
						skipRep = true
						break
					}
					itemtype = 0
					if item < 0 {
						itemtype = m.buckets[-1-item].Type
					}
					if itemtype != typ {
						if item >= 0 || int(-1-item) >= len(m.buckets) {
							skipRep = true
							break
						}
						in = m.buckets[-1-item]
						continue // retry_bucket with the child
					}
					for i := 0; i < outpos; i++ {
						if out[i] == item {
							collide = true
							break
						}
					}
					if !collide && recurseToLeaf {
						if item < 0 {
							subR := 0
							if a.varyR != 0 {
								subR = r >> (a.varyR - 1)
							}
							n := outpos + 1
							if a.stable != 0 {
								n = 1
							}
							if m.chooseFirstN(a, m.buckets[-1-item], n, 0, out2, outpos, count,
								recurseTries, 0, false, nil, subR) <= outpos {
								reject = true
							}
						} else {
							out2[outpos] = item
						}
					}
					if !reject && !collide && itemtype == 0 {
						reject = isOut(a.weights, item, a.x)
					}
				}
				if reject || collide {
					ftotal++
					flocal++
					switch {
					case collide && flocal <= a.localRetries:
						retryBucket = true
					case a.localFallbackTry > 0 && flocal <= uint32(len(in.Items))+a.localFallbackTry:
						retryBucket = true
					case ftotal < tries:
						retryDescent = true
					default:
						skipRep = true
					}
				}
				if !retryBucket {
					break
				}
			}
			if !retryDescent {
				break
			}
		}
		if skipRep {
			continue
		}
		out[outpos] = item
		outpos++
		count--
	}
	return outpos
}

// chooseIndep is crush_choose_indep: breadth-first, positionally stable
// selection for erasure-coded pools; a position that cannot be filled holds
// ItemNone instead of shifting the others.
func (m *Map) chooseIndep(a *chooseArgs, bucket *Bucket, left, numrep int, typ int32,
	out []int32, outpos int, tries, recurseTries uint32, recurseToLeaf bool,
	out2 []int32, parentR int) {
	endpos := outpos + left
	for rep := outpos; rep < endpos; rep++ {
		out[rep] = itemUndef
		if out2 != nil {
			out2[rep] = itemUndef
		}
	}
	for ftotal := uint32(0); left > 0 && ftotal < tries; ftotal++ {
		for rep := outpos; rep < endpos; rep++ {
			if out[rep] != itemUndef {
				continue
			}
			in := bucket
			for {
				r := rep + parentR
				if in.Alg == AlgUniform && len(in.Items)%numrep == 0 {
					r += (numrep + 1) * int(ftotal)
				} else {
					r += numrep * int(ftotal)
				}
				if len(in.Items) == 0 {
					break
				}
				item := in.choose(a.x, r)
				if item >= m.maxDevices {
					out[rep] = ItemNone
					if out2 != nil {
						out2[rep] = ItemNone
					}
					left--
					break
				}
				itemtype := int32(0)
				if item < 0 {
					itemtype = m.buckets[-1-item].Type
				}
				if itemtype != typ {
					if item >= 0 || int(-1-item) >= len(m.buckets) {
						out[rep] = ItemNone
						if out2 != nil {
							out2[rep] = ItemNone
						}
						left--
						break
					}
					in = m.buckets[-1-item]
					continue
				}
				collide := false
				for i := outpos; i < endpos; i++ {
					if out[i] == item {
						collide = true
						break
					}
				}
				if collide {
					break
				}
				if recurseToLeaf {
					if item < 0 {
						m.chooseIndep(a, m.buckets[-1-item], 1, numrep, 0, out2, rep,
							recurseTries, 0, false, nil, r)
						if out2[rep] == ItemNone {
							break
						}
					} else {
						out2[rep] = item
					}
				}
				if itemtype == 0 && isOut(a.weights, item, a.x) {
					break
				}
				out[rep] = item
				left--
				break
			}
		}
	}
	for rep := outpos; rep < endpos; rep++ {
		if out[rep] == itemUndef {
			out[rep] = ItemNone
		}
		if out2 != nil && out2[rep] == itemUndef {
			out2[rep] = ItemNone
		}
	}
}

// DoRule maps input x through rule ruleno and returns up to resultMax
// devices, appended to result[:0]. weights holds each device's reweight in
// 16.16 fixed point (0 = out, 0x10000 = fully in), indexed by device id; a
// device beyond len(weights) is out. A firstn rule that cannot find enough
// devices returns fewer; an indep rule returns ItemNone in the unfilled
// positions. An unknown rule returns nothing. Safe for concurrent use.
func (m *Map) DoRule(ruleno int, x uint32, resultMax int, weights []uint32, result []int32) []int32 {
	result = result[:0]
	rule := m.Rule(ruleno)
	if rule == nil || resultMax <= 0 {
		return result
	}
	var stack [3 * 16]int32
	var scratch []int32
	if 3*resultMax <= len(stack) {
		scratch = stack[:3*resultMax]
	} else {
		scratch = make([]int32, 3*resultMax)
	}
	w := scratch[:resultMax]
	o := scratch[resultMax : 2*resultMax]
	c := scratch[2*resultMax:]
	wsize := 0

	a := chooseArgs{weights: weights, x: x,
		localRetries: m.Tunables.ChooseLocalTries, localFallbackTry: m.Tunables.ChooseLocalFallbackTries,
		varyR: uint32(m.Tunables.ChooseLeafVaryR), stable: uint32(m.Tunables.ChooseLeafStable)}
	// choose_total_tries counted retries, not tries: Ceph adds one.
	chooseTries := m.Tunables.ChooseTotalTries + 1
	chooseLeafTries := uint32(0)

	for _, st := range rule.Steps {
		firstn := false
		switch st.Op {
		case OpTake:
			if (st.Arg1 >= 0 && st.Arg1 < m.maxDevices) || m.Bucket(st.Arg1) != nil {
				w[0] = st.Arg1
				wsize = 1
			}
		case OpSetChooseTries:
			if st.Arg1 > 0 {
				chooseTries = uint32(st.Arg1)
			}
		case OpSetChooseLeafTries:
			if st.Arg1 > 0 {
				chooseLeafTries = uint32(st.Arg1)
			}
		case OpSetChooseLocalTries:
			if st.Arg1 >= 0 {
				a.localRetries = uint32(st.Arg1)
			}
		case OpSetChooseLocalFallbackTries:
			if st.Arg1 >= 0 {
				a.localFallbackTry = uint32(st.Arg1)
			}
		case OpSetChooseLeafVaryR:
			if st.Arg1 >= 0 {
				a.varyR = uint32(st.Arg1)
			}
		case OpSetChooseLeafStable:
			if st.Arg1 >= 0 {
				a.stable = uint32(st.Arg1)
			}
		case OpChooseFirstN, OpChooseLeafFirstN, OpChooseIndep, OpChooseLeafIndep:
			firstn = st.Op == OpChooseFirstN || st.Op == OpChooseLeafFirstN
			if wsize == 0 {
				break
			}
			recurseToLeaf := st.Op == OpChooseLeafFirstN || st.Op == OpChooseLeafIndep
			osize := 0
			for i := 0; i < wsize; i++ {
				numrep := int(st.Arg1)
				if numrep <= 0 {
					numrep += resultMax
					if numrep <= 0 {
						continue
					}
				}
				bno := -1 - int(w[i])
				if bno < 0 || bno >= len(m.buckets) || m.buckets[bno] == nil {
					continue
				}
				if firstn {
					var recurseTries uint32
					switch {
					case chooseLeafTries != 0:
						recurseTries = chooseLeafTries
					case m.Tunables.ChooseLeafDescendOnce != 0:
						recurseTries = 1
					default:
						recurseTries = chooseTries
					}
					osize += m.chooseFirstN(&a, m.buckets[bno], numrep, st.Arg2, o[osize:], 0,
						resultMax-osize, chooseTries, recurseTries, recurseToLeaf, c[osize:], 0)
				} else {
					outSize := numrep
					if resultMax-osize < outSize {
						outSize = resultMax - osize
					}
					leafTries := chooseLeafTries
					if leafTries == 0 {
						leafTries = 1
					}
					m.chooseIndep(&a, m.buckets[bno], outSize, numrep, st.Arg2, o[osize:], 0,
						chooseTries, leafTries, recurseToLeaf, c[osize:], 0)
					osize += outSize
				}
			}
			if recurseToLeaf {
				copy(o[:osize], c[:osize])
			}
			w, o = o, w
			wsize = osize
		case OpEmit:
			for i := 0; i < wsize && len(result) < resultMax; i++ {
				result = append(result, w[i])
			}
			wsize = 0
		}
	}
	return result
}
