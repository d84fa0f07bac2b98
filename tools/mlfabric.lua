-- mlfabric.lua - Wireshark/tshark dissector of the MLfabric dataplane frames (UDP, docs/wire.md).
--
-- Install: copy to ~/.local/lib/wireshark/plugins/ (or run `tshark -X lua_script:tools/mlfabric.lua`).
-- Decodes UDP port 47000 (the cluster config's default udp_port; change it under
-- Preferences > Protocols > MLFABRIC). Layout of the 40-byte header, big-endian (lib/wire.c):
--   0 magic u16 "MF" | 2 version u8 | 3 type u8 | 4 flags u16 | 6 chan u16 | 8 len u32 |
--  12 seg u16 | 14 checksum u16 (RFC 1071 over the 40 header bytes) | 16 id u64 |
--  24 offset u64 | 32 total u64, then `len` bytes: DATA payload, SACK bitmap or ABORT reason.
-- Example: tshark -X lua_script:tools/mlfabric.lua -r dump.pcap -Y 'mlfabric.type == 2'

local MAGIC = 0x4d46
local HDR_LEN = 40

local mlf = Proto("mlfabric", "MLfabric dataplane")

local types = { [1] = "DATA", [2] = "SACK", [3] = "ABORT" }

local f = mlf.fields
f.magic = ProtoField.uint16("mlfabric.magic", "Magic", base.HEX)
f.version = ProtoField.uint8("mlfabric.version", "Version", base.DEC)
f.type = ProtoField.uint8("mlfabric.type", "Type", base.DEC, types)
f.flags = ProtoField.uint16("mlfabric.flags", "Flags", base.HEX)
f.flag_done = ProtoField.bool("mlfabric.flags.done", "DONE (transfer complete)", 16, nil, 0x0001)
f.flag_retx = ProtoField.bool("mlfabric.flags.retx", "RETX (retransmission)", 16, nil, 0x0002)
f.flag_ackreq = ProtoField.bool("mlfabric.flags.ackreq", "ACKREQ (SACK requested)", 16, nil, 0x0004)
f.flag_auth = ProtoField.bool("mlfabric.flags.auth", "AUTH (frame tag follows the header)", 16, nil, 0x0008)
f.flag_held = ProtoField.bool("mlfabric.flags.held", "HELD (SACK after a hold: no RTT sample)", 16, nil, 0x0010)
f.flag_chacha = ProtoField.bool("mlfabric.flags.chacha", "CHACHA (MAC ChaCha20-Poly1305, else AES-256-GCM)", 16, nil, 0x0020)
f.stamp = ProtoField.uint64("mlfabric.stamp", "Transfer stamp (epoch ms << 23 | sequence)", base.HEX)
f.nonce = ProtoField.bytes("mlfabric.nonce", "MAC nonce (8 random bytes, 32-bit counter)")
f.tag = ProtoField.bytes("mlfabric.tag", "Frame MAC (AES-256-GCM or ChaCha20-Poly1305 tag)")
f.chan = ProtoField.uint16("mlfabric.chan", "Application channel", base.DEC)
f.len = ProtoField.uint32("mlfabric.len", "Body length", base.DEC)
f.seg = ProtoField.uint16("mlfabric.seg", "Segment size", base.DEC)
f.csum = ProtoField.uint16("mlfabric.checksum", "Header checksum", base.HEX)
f.id = ProtoField.uint64("mlfabric.id", "Transfer id", base.HEX)
f.sender = ProtoField.uint16("mlfabric.id.host", "Sender host index", base.DEC)
f.offset = ProtoField.uint64("mlfabric.offset", "Offset", base.DEC)
f.cum_ack = ProtoField.uint64("mlfabric.cum_ack", "Cumulative ack (segments)", base.DEC)
f.total = ProtoField.uint64("mlfabric.total", "Transfer size", base.DEC)
f.payload = ProtoField.bytes("mlfabric.payload", "Payload")
f.acked = ProtoField.uint32("mlfabric.sack.acked", "Segments acknowledged in bitmap", base.DEC)
f.reason = ProtoField.string("mlfabric.reason", "Abort reason")

local e_csum = ProtoExpert.new("mlfabric.checksum.bad", "Bad MLfabric header checksum",
	expert.group.CHECKSUM, expert.severity.ERROR)
local e_trunc = ProtoExpert.new("mlfabric.truncated", "Truncated MLfabric frame",
	expert.group.MALFORMED, expert.severity.ERROR)
mlf.experts = { e_csum, e_trunc }

mlf.prefs.port = Pref.uint("UDP port", 47000, "UDP port of the MLfabric wire protocol")

-- RFC 1071 checksum of a TvbRange; 0 when the stored checksum is right.
local function csum16(range)
	local sum = 0
	for i = 0, range:len() - 2, 2 do
		sum = sum + range(i, 2):uint()
	end
	while sum > 0xffff do
		sum = sum % 0x10000 + math.floor(sum / 0x10000)
	end
	return 0xffff - sum
end

-- Arithmetic instead of bit operators: Wireshark embeds Lua 5.1/5.2 or 5.4 depending on version.
local function has_bit(v, bit)
	return math.floor(v / bit) % 2 == 1
end

local function popcount8(b)
	local n = 0
	while b > 0 do
		n = n + b % 2
		b = math.floor(b / 2)
	end
	return n
end

function mlf.dissector(tvb, pinfo, tree)
	if tvb:len() < 2 or tvb(0, 2):uint() ~= MAGIC then
		return 0
	end
	pinfo.cols.protocol = "MLfabric"
	local t = tree:add(mlf, tvb(0, math.min(tvb:len(), HDR_LEN)))
	if tvb:len() < HDR_LEN then
		t:add_proto_expert_info(e_trunc, "header needs 40 bytes, frame has " .. tvb:len())
		return tvb:len()
	end
	local typ = tvb(3, 1):uint()
	local flags = tvb(4, 2):uint()
	local blen = tvb(8, 4):uint()
	local id = tvb(16, 8):uint64()
	local off = tvb(24, 8):uint64()
	local total = tvb(32, 8):uint64()

	t:add(f.magic, tvb(0, 2))
	t:add(f.version, tvb(2, 1))
	t:add(f.type, tvb(3, 1))
	local ft = t:add(f.flags, tvb(4, 2))
	ft:add(f.flag_done, tvb(4, 2))
	ft:add(f.flag_retx, tvb(4, 2))
	ft:add(f.flag_ackreq, tvb(4, 2))
	ft:add(f.flag_auth, tvb(4, 2))
	ft:add(f.flag_held, tvb(4, 2))
	ft:add(f.flag_chacha, tvb(4, 2))
	t:add(f.chan, tvb(6, 2))
	t:add(f.len, tvb(8, 4))
	t:add(f.seg, tvb(12, 2))
	local ct = t:add(f.csum, tvb(14, 2))
	if csum16(tvb(0, HDR_LEN)) ~= 0 then
		ct:add_proto_expert_info(e_csum)
	end
	local it = t:add(f.id, tvb(16, 8))
	it:add(f.sender, tvb(16, 2))
	if typ == 2 then
		t:add(f.cum_ack, tvb(24, 8))
	else
		t:add(f.offset, tvb(24, 8))
	end
	t:add(f.total, tvb(32, 8))

	-- with AUTH a 36-byte tag sits between the header and the body: the 8-byte transfer stamp,
	-- the 12-byte nonce, then the 16-byte MAC (docs/security.md "Frames", "Replays")
	local B = HDR_LEN
	if has_bit(flags, 0x0008) then
		if tvb:len() < HDR_LEN + 36 then
			t:add_proto_expert_info(e_trunc, "frame tag needs 36 bytes after the header")
			return tvb:len()
		end
		t:add(f.stamp, tvb(HDR_LEN, 8))
		t:add(f.nonce, tvb(HDR_LEN + 8, 12))
		t:add(f.tag, tvb(HDR_LEN + 20, 16))
		B = HDR_LEN + 36
	end
	local avail = tvb:len() - B
	if blen > avail then
		t:add_proto_expert_info(e_trunc, "body of " .. blen .. " bytes, frame holds " .. avail)
		blen = avail
	end
	local name = types[typ] or ("type " .. typ)
	local info = string.format("%s id=%s", name, id:tohex())
	if typ == 1 then
		t:add(f.payload, tvb(B, blen))
		info = info .. string.format(" off=%s len=%d total=%s", off, blen, total)
		if has_bit(flags, 0x0002) then info = info .. " RETX" end
	elseif typ == 2 then
		local n = 0
		for i = 0, blen - 1 do
			n = n + popcount8(tvb(B + i, 1):uint())
		end
		t:add(f.acked, tvb(B, blen), n)
		info = info .. string.format(" cum=%s +%d", off, n)
		if has_bit(flags, 0x0001) then info = info .. " DONE" end
	elseif typ == 3 and blen > 0 then
		t:add(f.reason, tvb(B, blen))
		info = info .. " reason=\"" .. tvb(B, blen):string() .. "\""
	end
	if B > HDR_LEN then info = info .. " AUTH" end
	pinfo.cols.info = info
	return B + blen
end

local udp_port_table = DissectorTable.get("udp.port")
local registered_port = mlf.prefs.port
udp_port_table:add(registered_port, mlf)

function mlf.prefs_changed()
	if registered_port ~= mlf.prefs.port then
		udp_port_table:remove(registered_port, mlf)
		registered_port = mlf.prefs.port
		udp_port_table:add(registered_port, mlf)
	end
end
