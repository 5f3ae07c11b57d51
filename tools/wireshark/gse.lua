-- Wireshark dissector for the GSE / RoCE-baseline transport of this project (wire format
-- version 1, docs/wire-format.md): every packet kind and field, the flags, the SACK
-- bitmap, credit, entropy, timestamps, the CRC-32, the fields fabric mode rewrites, and
-- the security trailer of authenticated packets (--secure: payload tag, TSC = epoch and
-- counter, header tag).
--
--   tshark -X lua_script:tools/wireshark/gse.lua -r capture.pcap
--   wireshark -X lua_script:tools/wireshark/gse.lua capture.pcap
--   (or copy this file to ~/.local/lib/wireshark/plugins/)
--
-- Registered on UDP port 47000 (the project's default; Preferences > Protocols > GSE to
-- change it), plus a heuristic on every UDP port (version 1, a known kind, reserved bytes
-- zero, at least 64 bytes) for captures of runs on other ports.  Display filters:
-- gse.kind == 3, gse.flags.trimmed == 1, gse.msg_id == 42, gse.sack.received, ...

local gse = Proto("gse", "GSE transport (project wire format v1)")

local HEADER = 64
local KINDS = {[0] = "DATA", [1] = "REQUEST", [2] = "GRANT", [3] = "ACK", [4] = "NACK",
               [5] = "PAUSE", [6] = "RESUME", [7] = "CNP"}
local PRIOS = {[0] = "data", [1] = "control"}
local F_ECN_CE, F_TRIMMED, F_RETX, F_LAST, F_UNSCHED, F_ECT = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20
local F_SEC = 0x40                -- the security sublayer's: a trailer follows the payload
local KNOWN_FLAGS = 0x7F
local SEC_TAG, SEC_TRAILER = 16, 24
local FLAG_NAMES = {{F_ECN_CE, "CE"}, {F_TRIMMED, "TRIMMED"}, {F_RETX, "RETX"},
                    {F_LAST, "LAST"}, {F_UNSCHED, "UNSCHED"}, {F_ECT, "ECT"}, {F_SEC, "SEC"}}

local f = gse.fields
f.version = ProtoField.uint8("gse.version", "Version", base.DEC)
f.kind = ProtoField.uint8("gse.kind", "Kind", base.DEC, KINDS)
f.flags = ProtoField.uint16("gse.flags", "Flags", base.HEX)
f.flag_ce = ProtoField.bool("gse.flags.ecn_ce", "ECN CE (congestion experienced / echoed)",
                            16, nil, F_ECN_CE)
f.flag_trimmed = ProtoField.bool("gse.flags.trimmed", "Trimmed (payload cut by a switch)",
                                 16, nil, F_TRIMMED)
f.flag_retx = ProtoField.bool("gse.flags.retx", "Retransmission / credit re-request", 16,
                              nil, F_RETX)
f.flag_last = ProtoField.bool("gse.flags.last", "Last packet of the message", 16, nil, F_LAST)
f.flag_unsched = ProtoField.bool("gse.flags.unsched", "Unscheduled (sent without credit)",
                                 16, nil, F_UNSCHED)
f.flag_ect = ProtoField.bool("gse.flags.ect", "ECN-capable transport", 16, nil, F_ECT)
f.flag_sec = ProtoField.bool("gse.flags.sec", "Authenticated (security trailer)", 16, nil,
                             F_SEC)
f.flag_unknown = ProtoField.uint16("gse.flags.unknown", "Unknown flag bits", base.HEX, nil,
                                   0xFF80)
f.sec = ProtoField.bytes("gse.sec", "Security trailer")
f.sec_payload_tag = ProtoField.bytes("gse.sec.payload_tag", "Payload tag (AES-GCM)")
f.sec_epoch = ProtoField.uint16("gse.sec.epoch", "Epoch (the run's)", base.DEC)
f.sec_counter = ProtoField.uint64("gse.sec.counter", "Counter (sender toward destination)",
                                  base.DEC)
f.sec_header_tag = ProtoField.bytes("gse.sec.header_tag", "Header tag (AES-GCM)")
f.src = ProtoField.uint32("gse.src", "Source node", base.DEC)
f.dst = ProtoField.uint32("gse.dst", "Destination node", base.DEC)
f.msg_id = ProtoField.uint32("gse.msg_id", "Message id", base.DEC)
f.psn = ProtoField.uint32("gse.psn", "PSN", base.DEC)
f.entropy = ProtoField.uint16("gse.entropy", "Entropy (path)", base.HEX)
f.payload_len = ProtoField.uint16("gse.payload_len", "Payload length", base.DEC)
f.msg_len = ProtoField.uint32("gse.msg_len", "Message length", base.DEC)
f.credit = ProtoField.uint32("gse.credit", "Credit", base.DEC)
f.aux = ProtoField.uint32("gse.aux", "Aux", base.DEC)
f.sack_base = ProtoField.uint32("gse.sack_base", "SACK base", base.DEC)
f.sack_bits = ProtoField.uint64("gse.sack_bits", "SACK bitmap", base.HEX)
f.sack_received = ProtoField.string("gse.sack.received", "PSNs received (SACK)")
f.sack_count = ProtoField.uint8("gse.sack.count", "PSNs in the bitmap", base.DEC)
f.ts = ProtoField.uint64("gse.ts", "Timestamp (ps)", base.DEC)
f.ts_us = ProtoField.double("gse.ts_us", "Timestamp (us)")
f.prio = ProtoField.uint8("gse.prio", "Priority class", base.DEC, PRIOS)
f.reserved8 = ProtoField.uint8("gse.reserved8", "Reserved", base.HEX)
f.reserved16 = ProtoField.uint16("gse.reserved16", "Reserved", base.HEX)
f.checksum = ProtoField.uint32("gse.checksum", "Checksum (CRC-32)", base.HEX)
f.checksum_status = ProtoField.string("gse.checksum.status", "Checksum status")
f.payload = ProtoField.bytes("gse.payload", "Payload")
f.leaf = ProtoField.bool("gse.fabric", "Fabric mode (leaf-to-leaf)")
f.voq_seq = ProtoField.uint32("gse.fabric.voq_seq", "VOQ sequence (fabric shim, aux)",
                              base.DEC)
f.host_entropy = ProtoField.uint32("gse.fabric.host_entropy",
                                   "Host's entropy (fabric shim, sack_base)", base.HEX)
f.dst_host = ProtoField.uint32("gse.fabric.dst_host", "Destination host (leaf VOQ, msg_id)",
                               base.DEC)

local ef = gse.experts
ef.truncated = ProtoExpert.new("gse.truncated", "Datagram shorter than the 64-byte header",
                               expert.group.MALFORMED, expert.severity.ERROR)
ef.bad_version = ProtoExpert.new("gse.bad_version", "Unsupported wire version",
                                 expert.group.PROTOCOL, expert.severity.ERROR)
ef.bad_kind = ProtoExpert.new("gse.bad_kind", "Unknown packet kind", expert.group.PROTOCOL,
                              expert.severity.ERROR)
ef.bad_flags = ProtoExpert.new("gse.bad_flags", "Unknown flag bits", expert.group.PROTOCOL,
                               expert.severity.WARN)
ef.bad_length = ProtoExpert.new("gse.bad_length", "Payload size disagrees with payload_len",
                                expert.group.PROTOCOL, expert.severity.ERROR)
ef.bad_reserved = ProtoExpert.new("gse.bad_reserved", "Non-zero reserved bytes",
                                  expert.group.PROTOCOL, expert.severity.WARN)
ef.bad_sack = ProtoExpert.new("gse.bad_sack", "sack_base not a multiple of 8",
                              expert.group.PROTOCOL, expert.severity.WARN)
ef.bad_checksum = ProtoExpert.new("gse.bad_checksum", "Checksum mismatch (CRC-32)",
                                  expert.group.CHECKSUM, expert.severity.WARN)
ef.trim = ProtoExpert.new("gse.trim", "Trimmed DATA: header only", expert.group.SEQUENCE,
                          expert.severity.NOTE)
ef.pfc = ProtoExpert.new("gse.pfc", "PFC frame", expert.group.SEQUENCE, expert.severity.CHAT)

gse.prefs.port = Pref.uint("UDP port", 47000, "UDP port of the transport (both directions)")
gse.prefs.heuristic = Pref.bool("Heuristic on other UDP ports", true,
                                "Also try every UDP datagram that looks like wire format v1")
gse.prefs.verify = Pref.bool("Verify the CRC-32", true,
                             "Compute the checksum over header and (captured) payload")
gse.prefs.fabric = Pref.enum("Fabric-mode fields", 0,
                             "How to read leaf-to-leaf REQUEST/GRANT and the DATA shim",
                             {{1, "auto", 0}, {2, "always", 1}, {3, "never", 2}}, true)
gse.prefs.hosts = Pref.uint("Hosts in the fabric", 0,
                            "Node ids below this are hosts (0: unknown; fabric mode then " ..
                            "guesses leaf messages from their fields)")

-- CRC-32 (IEEE 802.3, zlib's), table-driven
local bitlib = bit32 or bit
local band, bxor, rshift = bitlib.band, bitlib.bxor, bitlib.rshift
local CRC = {}
for i = 0, 255 do
    local c = i
    for _ = 1, 8 do
        if band(c, 1) == 1 then c = bxor(0xEDB88320, rshift(c, 1)) else c = rshift(c, 1) end
    end
    CRC[i] = c
end

local function crc32(tvb, ranges)
    local c = 0xFFFFFFFF
    for _, r in ipairs(ranges) do
        local bytes = tvb:raw(r[1], r[2])
        for i = 1, #bytes do
            c = bxor(CRC[band(bxor(c, bytes:byte(i)), 0xFF)], rshift(c, 8))
        end
    end
    c = bxor(c, 0xFFFFFFFF)
    if c < 0 then c = c + 4294967296 end
    return c
end

local function flag_text(flags)
    local out = {}
    for _, fl in ipairs(FLAG_NAMES) do
        if band(flags, fl[1]) ~= 0 then out[#out + 1] = fl[2] end
    end
    return table.concat(out, ",")
end

-- the labels a field takes for each kind (docs/wire-format.md, "Per-kind meaning")
local function labels(kind, leaf, shim)
    local L = {psn = "PSN", credit = "Credit", aux = "Aux (unused)", msg_id = "Message id",
               entropy = "Entropy (path)", msg_len = "Message length",
               ts = "Timestamp (ps)", sack_base = "SACK base (unused)"}
    if kind == 0 then
        L.psn = "PSN (sequence number in the message)"
        L.credit = "Credit (unscheduled window bytes, with UNSCHED)"
        L.ts = "Transmit time (ps)"
        if shim then
            L.aux = "Aux: VOQ sequence (fabric shim)"
            L.sack_base = "SACK base: host's entropy (fabric shim)"
            L.entropy = "Entropy: path chosen by the source leaf"
        end
    elseif kind == 1 then
        if leaf then
            L.msg_id = "Message id: destination host (leaf VOQ)"
            L.psn = "PSN: VOQ request sequence"
            L.credit = "Credit: wire bytes queued toward the host (cumulative, mod 2^32)"
            L.aux = "Aux: credit received so far (cumulative wire bytes)"
        else
            L.psn = "PSN: request sequence number"
            L.credit = "Credit: total the message needs (payload bytes)"
            L.aux = "Aux: credit received so far"
        end
        L.ts = "Transmit time (ps)"
    elseif kind == 2 then
        if leaf then
            L.msg_id = "Message id: destination host (leaf VOQ)"
            L.credit = "Credit: wire bytes granted (cumulative, mod 2^32)"
            L.ts = "Transmit time (ps)"
        else
            L.credit = "Credit: payload bytes granted"
            L.ts = "Echoed timestamp (ps)"
        end
    elseif kind == 3 then
        L.psn = "PSN: cumulative ack (every psn below received)"
        L.sack_base = "SACK base (first psn of the bitmap)"
        L.entropy = "Entropy (echo)"
        L.ts = "Echoed timestamp (ps)"
    elseif kind == 4 then
        L.psn = "PSN: the trimmed packet"
        L.entropy = "Entropy (echo)"
        L.ts = "Echoed timestamp (ps)"
    elseif kind == 5 then
        L.credit = "Credit: pause quanta (512 bit times)"
        L.aux = "Aux: priority class paused"
        L.ts = "Send time (ps)"
    elseif kind == 6 then
        L.aux = "Aux: priority class resumed"
        L.ts = "Send time (ps)"
    elseif kind == 7 then
        L.msg_id = "Message id: flow notified"
        L.ts = "Send time (ps)"
    end
    return L
end

local function is_leaf_message(kind, src, msg_len, entropy)
    local mode = gse.prefs.fabric
    if kind ~= 1 and kind ~= 2 then return false end
    if mode == 2 then return false end
    if mode == 1 then return true end
    local hosts = gse.prefs.hosts
    if hosts > 0 then return src >= hosts end
    if kind == 1 then return msg_len == 0 end
    return entropy ~= 0           -- a host's GRANT carries entropy 0
end

local function dissect(tvb, pinfo, tree)
    local caplen = tvb:len()
    local total = tvb:reported_length_remaining()
    pinfo.cols.protocol = "GSE"
    if total < HEADER or caplen < HEADER then
        local t = tree:add(gse, tvb(), "GSE (truncated)")
        t:add_proto_expert_info(ef.truncated,
                                string.format("%d bytes, the header needs 64", total))
        return caplen
    end
    local version = tvb(0, 1):uint()
    local kind = tvb(1, 1):uint()
    local flags = tvb(2, 2):uint()
    local src, dst = tvb(4, 4):uint(), tvb(8, 4):uint()
    local msg_id, psn = tvb(12, 4):uint(), tvb(16, 4):uint()
    local entropy, payload_len = tvb(20, 2):uint(), tvb(22, 2):uint()
    local msg_len, credit, aux = tvb(24, 4):uint(), tvb(28, 4):uint(), tvb(32, 4):uint()
    local sack_base = tvb(36, 4):uint()
    local prio = tvb(56, 1):uint()
    local checksum = tvb(60, 4):uint()
    local carries = kind == 0 and band(flags, F_TRIMMED) == 0
    local leaf = is_leaf_message(kind, src, msg_len, entropy)
    local shim = kind == 0 and gse.prefs.fabric ~= 2 and
                 (gse.prefs.fabric == 1 or aux ~= 0)
    local L = labels(kind, leaf, shim)
    local kname = KINDS[kind] or ("kind " .. kind)
    if kind == 0 and band(flags, F_TRIMMED) ~= 0 then kname = "DATA (trimmed)" end

    local t = tree:add(gse, tvb(), string.format("GSE %s, %d -> %d", kname, src, dst))
    local vi = t:add(f.version, tvb(0, 1))
    if version ~= 1 then vi:add_proto_expert_info(ef.bad_version) end
    local ki = t:add(f.kind, tvb(1, 1))
    if KINDS[kind] == nil then ki:add_proto_expert_info(ef.bad_kind) end
    local fi = t:add(f.flags, tvb(2, 2))
    fi:append_text(" (" .. flag_text(flags) .. ")")
    fi:add(f.flag_ce, tvb(2, 2))
    fi:add(f.flag_trimmed, tvb(2, 2))
    fi:add(f.flag_retx, tvb(2, 2))
    fi:add(f.flag_last, tvb(2, 2))
    fi:add(f.flag_unsched, tvb(2, 2))
    fi:add(f.flag_ect, tvb(2, 2))
    fi:add(f.flag_sec, tvb(2, 2))
    if band(flags, 0xFFFF - KNOWN_FLAGS) ~= 0 then
        fi:add(f.flag_unknown, tvb(2, 2)):add_proto_expert_info(ef.bad_flags)
    end
    t:add(f.src, tvb(4, 4))
    t:add(f.dst, tvb(8, 4))
    t:add(f.msg_id, tvb(12, 4)):set_text(L.msg_id .. ": " .. msg_id)
    t:add(f.psn, tvb(16, 4)):set_text(L.psn .. ": " .. psn)
    t:add(f.entropy, tvb(20, 2)):set_text(string.format("%s: 0x%04x", L.entropy, entropy))
    t:add(f.payload_len, tvb(22, 2))
    t:add(f.msg_len, tvb(24, 4)):set_text(L.msg_len .. ": " .. msg_len)
    t:add(f.credit, tvb(28, 4)):set_text(L.credit .. ": " .. credit)
    t:add(f.aux, tvb(32, 4)):set_text(L.aux .. ": " .. aux)
    local si = t:add(f.sack_base, tvb(36, 4))
    si:set_text(L.sack_base .. ": " .. sack_base)
    if kind == 3 and sack_base % 8 ~= 0 then si:add_proto_expert_info(ef.bad_sack) end
    local bits = tvb(40, 8):uint64()
    local bi = t:add(f.sack_bits, tvb(40, 8))
    if kind == 3 then
        local got = {}
        local hi, lo = tvb(40, 4):uint(), tvb(44, 4):uint()
        for i = 0, 63 do
            local set
            if i < 32 then set = band(rshift(lo, i), 1) == 1
            else set = band(rshift(hi, i - 32), 1) == 1 end
            if set then got[#got + 1] = tostring(sack_base + i) end
        end
        bi:add(f.sack_count, tvb(40, 8), #got)
        bi:add(f.sack_received, tvb(40, 8), table.concat(got, ","))
    end
    local ti = t:add(f.ts, tvb(48, 8))
    ti:set_text(L.ts .. ": " .. tostring(tvb(48, 8):uint64()))
    local ts_hi, ts_lo = tvb(48, 4):uint(), tvb(52, 4):uint()
    ti:add(f.ts_us, tvb(48, 8), (ts_hi * 4294967296 + ts_lo) / 1e6)
    t:add(f.prio, tvb(56, 1))
    local r8 = t:add(f.reserved8, tvb(57, 1))
    local r16 = t:add(f.reserved16, tvb(58, 2))
    if tvb(57, 1):uint() ~= 0 or tvb(58, 2):uint() ~= 0 then
        r16:add_proto_expert_info(ef.bad_reserved)
    end
    local ci = t:add(f.checksum, tvb(60, 4))
    local status = "unverified"
    if gse.prefs.verify and caplen == total then
        local ranges = {{0, 60}}
        if total > HEADER then ranges[2] = {HEADER, total - HEADER} end
        local c = crc32(tvb, ranges)
        if c == checksum then status = "good" else
            status = "bad"
            ci:add_proto_expert_info(ef.bad_checksum,
                                     string.format("header says 0x%08x, computed 0x%08x",
                                                   checksum, c))
        end
    elseif caplen < total then
        status = "unverified (payload cut by the capture)"
    end
    ci:add(f.checksum_status, tvb(60, 4), status)
    if leaf then
        t:add(f.leaf, tvb(1, 1), true)
        t:add(f.dst_host, tvb(12, 4))
    end
    if shim then
        t:add(f.leaf, tvb(1, 1), true)
        t:add(f.voq_seq, tvb(32, 4))
        t:add(f.host_entropy, tvb(36, 4))
    end
    local secured = band(flags, F_SEC) ~= 0
    local trailer = 0
    if secured then trailer = SEC_TRAILER + (carries and SEC_TAG or 0) end
    local body = total - HEADER - trailer          -- payload bytes (ciphertext if secured)
    if carries then
        if body ~= payload_len then
            t:add_proto_expert_info(ef.bad_length,
                                    string.format("payload_len %d, datagram carries %d",
                                                  payload_len, body))
        end
        if caplen > HEADER and body > 0 then
            local n = math.min(body, caplen - HEADER)
            local pi = t:add(f.payload, tvb(HEADER, n))
            if secured then pi:append_text(" (encrypted)") end
        end
    elseif body ~= 0 then
        t:add_proto_expert_info(ef.bad_length,
                                string.format("%d payload bytes on a packet that carries none",
                                              body))
    elseif kind == 0 then
        t:add_proto_expert_info(ef.trim)
    end
    if kind == 5 or kind == 6 then t:add_proto_expert_info(ef.pfc) end
    local sec_info = ""
    if secured and body >= 0 and caplen == total then
        local at = HEADER + body                   -- payload tag | TSC | header tag
        local st = t:add(f.sec, tvb(at, trailer))
        if carries then
            st:add(f.sec_payload_tag, tvb(at, SEC_TAG))
            at = at + SEC_TAG
        end
        st:add(f.sec_epoch, tvb(at, 2))
        st:add(f.sec_counter, tvb(at + 2, 6))
        st:add(f.sec_header_tag, tvb(at + 8, SEC_TAG))
        sec_info = string.format(" SEC epoch=%d ctr=%s", tvb(at, 2):uint(),
                                 tostring(tvb(at + 2, 6):uint64()))
    end

    local info
    if kind == 0 then
        info = string.format("%s msg=%d psn=%d len=%d ent=0x%04x", kname, msg_id, psn,
                             payload_len, entropy)
    elseif kind == 1 then
        info = string.format("%s%s msg=%d seq=%d need=%d got=%d", kname,
                             leaf and " (leaf)" or "", msg_id, psn, credit, aux)
    elseif kind == 2 then
        info = string.format("%s%s msg=%d credit=%d", kname, leaf and " (leaf)" or "",
                             msg_id, credit)
    elseif kind == 3 then
        info = string.format("ACK msg=%d cum=%d sack=%d:%s", msg_id, psn, sack_base,
                             tostring(bits:tohex()))
    elseif kind == 4 then
        info = string.format("NACK msg=%d psn=%d", msg_id, psn)
    elseif kind == 5 then
        info = string.format("PAUSE class=%d quanta=%d", aux, credit)
    elseif kind == 6 then
        info = string.format("RESUME class=%d", aux)
    elseif kind == 7 then
        info = string.format("CNP msg=%d", msg_id)
    else
        info = kname
    end
    if flags ~= 0 then info = info .. " [" .. flag_text(flags) .. "]" end
    pinfo.cols.info = string.format("%d -> %d %s%s", src, dst, info, sec_info)
    return caplen
end

function gse.dissector(tvb, pinfo, tree)
    return dissect(tvb, pinfo, tree)
end

local function heuristic(tvb, pinfo, tree)
    if not gse.prefs.heuristic or tvb:len() < HEADER then return false end
    if tvb(0, 1):uint() ~= 1 or tvb(1, 1):uint() > 7 then return false end
    if band(tvb(2, 2):uint(), 0xFFFF - KNOWN_FLAGS) ~= 0 then return false end
    if tvb(57, 1):uint() ~= 0 or tvb(58, 2):uint() ~= 0 then return false end
    dissect(tvb, pinfo, tree)
    return true
end

local registered = nil
function gse.init()
    local udp = DissectorTable.get("udp.port")
    if registered ~= nil and registered ~= gse.prefs.port then udp:remove(registered, gse) end
    udp:add(gse.prefs.port, gse)
    registered = gse.prefs.port
end

DissectorTable.get("udp.port"):add(47000, gse)
registered = 47000
gse:register_heuristic("udp", heuristic)
