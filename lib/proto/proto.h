/* proto.h - the version of MLfabric's protocols: the wire header (wire.h, docs/wire.md), the app
 * socket messages (appmsg.h), the control messages (ctl.h, docs/control.md) and the payload
 * header (mlf_payload.h). Bump it when any of them changes incompatibly; a peer speaking another
 * version is refused with a message naming both versions. */
#ifndef MLF_PROTO_H
#define MLF_PROTO_H

/** Protocol version carried in every frame header (wire.h: WIRE_VERSION) and in hello (ctl). */
#define MLF_PROTO_VERSION 2 /* 2: frame tags of 36 bytes (stamp, nonce, AEAD MAC; issue 37), were 24 */

#endif
