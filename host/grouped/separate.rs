//! The separate convention (the GPU MODE grouped problem, and a batch of products): per group
//! its own A, B (and B3) and C with its own M, N and K, sizes on the host, each a view
//! ([`NvFp4Ref`], [`F16Mut`]) of the library's memory or the caller's. Each launch carries the
//! groups' table (and the maps its kernels read): on Hopper, up to
//! [`PARAMETER_GROUPS`] groups in the preparation pass's parameters; otherwise uploaded from
//! page-locked memory ahead of the pass (asynchronously). Not inside a CUDA graph capture.

use nvfp4_kernel::grouped::{GroupedPrepareArgs, PARAMETER_GROUPS, SeparateParameters, SeparatePrepareArgs};
use nvfp4_kernel::launch::TensorMap;
use nvfp4_kernel::sm90::config::{K_MULTIPLE, TILE_N};

use crate::error::{Error, Result};
use crate::gpu::buffer::check_alignment;
use crate::gpu::{F16Mut, Gpu, NvFp4Ref, tensor_map};
use crate::rules::check_dimension;

use super::{Backend, GroupedLayout, GroupedPlan, Preparation, sm100_tile_for};
use crate::rules::{kernel_alphas, operand_rescale};

/// One group of a separate-convention launch. A group without tokens has `a` and `c` both
/// `None` (it computes nothing and reads no weights). Library-owned memory enters as
/// [`DeviceNvFp4Matrix::view`](crate::gpu::DeviceNvFp4Matrix::view) and [`F16Mut::of`];
/// caller-owned memory as `from_raw`. Each view's global scale enters the group's α.
pub struct SeparateGroup<'a> {
    /// Its tokens, `M_g × K_g`.
    pub a: Option<NvFp4Ref<'a>>,
    /// Gate (dual) or plain weights, `N_g × K_g`.
    pub gate: NvFp4Ref<'a>,
    /// Up weights of a dual GEMM, `N_g × K_g`.
    pub up: Option<NvFp4Ref<'a>>,
    /// Its output, `M_g × N_g` fp16 (row-major).
    pub c: Option<F16Mut<'a>>,
}

/// Byte offset of the per-group tensor maps (A, gate, up) in a separate-convention table of
/// `groups` entries (128-byte aligned).
pub(super) fn separate_maps_offset(groups: usize) -> usize {
    (groups * std::mem::size_of::<nvfp4_kernel::grouped::SeparateGroup>())
        .next_multiple_of(tensor_map::MAP_BYTES)
}

/// Bytes of a separate-convention table of `groups` entries with their maps (Blackwell reads
/// tokens and weights through them, Hopper its weights).
pub(super) fn separate_table_bytes(groups: usize) -> usize {
    separate_maps_offset(groups) + 3 * groups * tensor_map::MAP_BYTES
}

impl GroupedPlan {
    /// Enqueues a separate-convention launch: group `g` computes into its own `c`. A batch of
    /// `L` products of one shape is such a launch of `L` groups. Not inside a CUDA graph
    /// capture (its group table comes from the host with each launch).
    pub fn launch_separate(&self, gpu: &Gpu, groups: &[SeparateGroup]) -> Result<()> {
        let GroupedLayout::Separate {
            groups: most_groups,
            rows: capacity,
            max_k,
        } = self.layout
        else {
            return Err(Error::invalid(
                "groups",
                "this plan takes the contiguous convention (launch)",
                "separate groups",
            ));
        };
        if groups.is_empty() || groups.len() > most_groups {
            return Err(Error::invalid(
                "groups",
                format!("must hold 1..={most_groups} groups (the plan's)"),
                groups.len(),
            ));
        }
        gpu.check_not_capturing(
            "a separate-convention grouped launch (its group table comes from the host)",
        )?;
        let gated = self.op.gated();
        let blackwell = matches!(self.backend, Backend::Sm100 { .. });
        // Hopper's tiled kernel reads the weights through maps (its weight ring); the
        // decode-size kernel reads them directly.
        let weight_maps = matches!(
            self.backend,
            Backend::Sm90 {
                decode_window: None,
                ..
            }
        );
        // Hopper: a table of few groups travels in the preparation pass's parameters.
        let in_parameters = !blackwell && groups.len() <= PARAMETER_GROUPS;
        let rescale = operand_rescale(gpu.arch());
        let table_base = self
            .separate_table
            .as_ref()
            .ok_or_else(|| Error::invalid("plan", "has no separate-convention table", "contiguous"))?
            .address();
        // The maps the kernels read, in group order, from here on (Blackwell: A, gate, up;
        // Hopper: gate, and up for a dual GEMM).
        let maps_base = table_base + separate_maps_offset(most_groups) as u64;
        let mut maps = Vec::new();
        let mut table = Vec::with_capacity(groups.len());
        let mut token_row = 0usize;
        for (g, group) in groups.iter().enumerate() {
            let (n, k) = (group.gate.rows(), group.gate.k());
            let m = group.a.map_or(0, |a| a.rows());
            if let Some(a) = group.a
                && a.k() != k
            {
                return Err(Error::ShapeMismatch(format!(
                    "group {g}: A has K = {}, its weights K = {k}",
                    a.k()
                )));
            }
            check_dimension("n", n, TILE_N as usize)
                .and_then(|_| check_dimension("k", k, K_MULTIPLE as usize))
                .map_err(|e| Error::ShapeMismatch(format!("group {g}: {e}")))?;
            if k > max_k {
                return Err(Error::ShapeMismatch(format!(
                    "group {g}: K = {k} exceeds the plan's max_k {max_k}"
                )));
            }
            let up = match (gated, group.up) {
                (true, Some(up)) if (up.rows(), up.k()) == (n, k) => up,
                (true, Some(up)) => {
                    return Err(Error::ShapeMismatch(format!(
                        "group {g}: up weights are {} × {}, the gate's {n} × {k}",
                        up.rows(),
                        up.k()
                    )));
                }
                (true, None) => {
                    return Err(Error::invalid(
                        "up",
                        "a dual GEMM needs up weights in every group",
                        g,
                    ));
                }
                (false, Some(_)) => return Err(Error::invalid("up", "a plain GEMM takes no up weights", g)),
                (false, None) => group.gate,
            };
            let c_address = match (group.a, &group.c) {
                (Some(_), Some(c)) => {
                    c.expect_len("c", m * n)?;
                    c.expect_f16("c", "the separate grouped convention")?;
                    c.address()
                }
                (None, None) => 0,
                _ => {
                    return Err(Error::invalid(
                        "c",
                        "a group has both tokens and an output, or neither",
                        g,
                    ));
                }
            };
            // Each map the kernels read, at `maps_base + 128·i` for the `i`-th (a group without
            // tokens reads no A: its map is left zero).
            let mut map = |m: Option<NvFp4Ref>, weights: bool| -> Result<u64> {
                if !(blackwell || (weights && weight_maps)) {
                    return Ok(0);
                }
                let at = maps_base + (maps.len() * tensor_map::MAP_BYTES) as u64;
                maps.push(match m {
                    Some(m) if blackwell => tensor_map::packed_rows(m.data_address(), m.rows(), m.k())?,
                    Some(m) => tensor_map::sm90_weight_rows(m.data_address(), m.rows(), m.k())?,
                    None => TensorMap::default(),
                });
                Ok(at)
            };
            for (name, m) in [("a", group.a), ("gate", Some(group.gate)), ("up", Some(up))] {
                if let Some(m) = m {
                    m.expect_host_global_scale(name, "the separate grouped convention")?;
                }
            }
            let global_a = group.a.and_then(|a| a.global_scale()).unwrap_or(1.0);
            // In map order: A (Blackwell), gate, up. Hopper's plain tiles take both halves of
            // their outputs from the gate map (`sm90::grouped`'s weight source), so a plain
            // GEMM there encodes one map a group and points its up map at it.
            let a_map = map(group.a, false)?;
            let gate_map = map(Some(group.gate), true)?;
            let up_map = if gated || blackwell {
                map(Some(up), true)?
            } else {
                gate_map
            };
            let (alpha_gate, alpha_up) = kernel_alphas(
                global_a * group.gate.global_scale().unwrap_or(1.0),
                global_a * up.global_scale().unwrap_or(1.0),
                rescale,
                gated,
            )?;
            let entry = nvfp4_kernel::grouped::SeparateGroup {
                a: group.a.map_or(0, |a| a.data_address()),
                a_scales: group.a.map_or(0, |a| a.scales_address()),
                gate: group.gate.data_address(),
                gate_scales: group.gate.scales_address(),
                up: up.data_address(),
                up_scales: up.scales_address(),
                out: c_address,
                // Hopper: the group's rows in the decoded token buffer; Blackwell: its own map.
                token_row: if blackwell { 0 } else { token_row as u32 },
                rows: m as u32,
                n: n as u32,
                k: k as u32,
                alpha_gate,
                alpha_up,
                a_map,
                gate_map,
                up_map,
            };
            for (arg, address) in [
                ("a", entry.a),
                ("a scales", entry.a_scales),
                ("gate", entry.gate),
                ("gate scales", entry.gate_scales),
                ("up", entry.up),
                ("up scales", entry.up_scales),
                ("c", entry.out),
            ] {
                check_alignment(arg, address, 16)?;
            }
            table.push(entry);
            token_row += m;
        }
        if token_row > capacity {
            return Err(Error::invalid(
                "groups",
                format!("must hold at most {capacity} tokens in all (the plan's rows)"),
                token_row,
            ));
        }
        // The lock is held until both kernels are enqueued, so that launches of one plan from
        // two threads cannot interleave one's table (or maps) between the other's kernels.
        let mut staging = self
            .separate_staging
            .as_ref()
            .ok_or_else(|| Error::invalid("plan", "has no separate-convention table", "contiguous"))?
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if !in_parameters {
            // SAFETY: `SeparateGroup` is `repr(C)` plain data without padding; the slice covers
            // exactly the table's elements.
            let bytes: &[u8] = unsafe {
                std::slice::from_raw_parts(table.as_ptr().cast::<u8>(), std::mem::size_of_val(&table[..]))
            };
            let mut upload = bytes.to_vec();
            if !maps.is_empty() {
                upload.resize(separate_maps_offset(most_groups), 0);
                upload.extend(tensor_map::bytes_of(&maps));
            }
            // From page-locked memory: the upload never makes the host wait for the stream.
            staging.upload(gpu.stream(), table_base, &upload)?;
        }
        let tile = self.launch_tile(Some(sm100_tile_for(
            gated,
            token_row / table.len(),
            table.iter().map(|e| (e.n, 0)),
        )))?;
        let mut args = GroupedPrepareArgs {
            groups: groups.len() as u32,
            separate_convention: 1,
            separate: table_base as *const nvfp4_kernel::grouped::SeparateGroup,
            ..self.prepare_args(groups.len(), tile)
        };
        if !blackwell {
            args.token_rows = token_row as u32;
        }
        let no_maps = [TensorMap::default(); 3];
        let enqueued = if in_parameters {
            let mut parameters = SeparatePrepareArgs {
                prepare: args,
                maps_out: maps_base as *mut TensorMap,
                maps: maps.len() as u32,
                table: SeparateParameters::default(),
            };
            parameters.table.groups[..table.len()].copy_from_slice(&table);
            parameters.table.maps[..maps.len()].copy_from_slice(&maps);
            self.enqueue(gpu, Preparation::SeparateInParameters(&parameters), tile, no_maps)
        } else {
            self.enqueue(gpu, Preparation::Common(&args), tile, no_maps)
        };
        drop(staging);
        enqueued
    }
}
