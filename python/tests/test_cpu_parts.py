"""The CPU's default mode holds the coded bytes, the output head decoded, and a decode buffer
for one matrix: an untied input embedding's lookups decode only the rows they name
(decoders.CpuRowsDecoder), and each Linear of a block decodes its own weight whole into the
buffer just before its forward and multiplies it whole (decoders.PartsDecoder,
modules.PartsLinear). The head is multiplied whole too: in parts of its rows torch's CPU GEMM
does not always round as on the whole, so a head-sized BF16 matrix is needed anyway. The logits
equal the BF16 model's bit for bit (raw 16-bit patterns) at every token count tried, and no
other BF16 tensor larger than the decode buffer stays in the model or the engine."""
import pytest
import torch

import df11
import models

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

# A vocabulary large enough that the head (vocab x 64) outgrows the largest matrix of a block
# of the tiny models (160 x 64): the buffer is a block matrix's size, not the head's.
FAMILIES = {"llama": 4001, "qwen3": 3000}  # untied, tied


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def folders(request, tmp_path_factory):
    family = request.param
    work = tmp_path_factory.mktemp(family)
    bf16_dir, df11_dir = str(work / "bf16"), str(work / "df11")
    models.build_llm(family, vocab_size=FAMILIES[family]).save_pretrained(bf16_dir)
    models.df11_compress(bf16_dir, df11_dir)
    return family, models.bf16_llm(bf16_dir), df11.from_pretrained(df11_dir, device="cpu")


def bits(t):
    return t.contiguous().view(torch.int16)


def check_bits(a, b):
    assert a.shape == b.shape and a.dtype == b.dtype == torch.bfloat16
    assert torch.equal(bits(a), bits(b)), f"max |diff| {(a.float() - b.float()).abs().max()}"


def test_head_resident_and_one_matrix_buffer(folders):
    family, ref, model = folders
    head, emb = model.get_output_embeddings(), model.get_input_embeddings()
    # The head is held decoded, an ordinary nn.Linear with BF16's weight: it is multiplied
    # whole, so a head-sized BF16 matrix is needed anyway, and no step decodes it again.
    assert type(head) is torch.nn.Linear and type(head.weight) is torch.nn.Parameter
    check_bits(head.weight, ref.get_output_embeddings().weight)
    # Every other Linear decodes its own weight: the buffer holds a block's largest matrix.
    state = model.df11.devices[torch.device("cpu")]
    linears = [m for n, m in model.named_modules()
               if isinstance(m, torch.nn.Linear) and m is not head]
    assert all(isinstance(m, df11.modules.PartsLinear) for m in linears)
    assert all(isinstance(m.weight, df11.modules.CodedWeight) for m in linears)
    assert all(u.mode.name == "parts" for u in model.df11.units)
    largest = max(m.weight.numel() for m in linears)
    assert largest <= state.buffer.numel() < largest + 128 < head.weight.numel()
    assert len(model.df11.resident) == 1
    if family == "qwen3":  # tied: the embedding is the decoded head, as in BF16
        assert head.weight is emb.weight and not model.df11.rows
    else:  # the lookups decode the rows they name: no tensor of the whole embedding
        assert isinstance(emb.weight, df11.modules.CodedWeight) and len(model.df11.rows) == 1
    # No other BF16 tensor larger than the buffer, and none of a whole block.
    for name, t in list(model.named_parameters()) + list(model.named_buffers()):
        if t.dtype == torch.bfloat16 and t.stride() != (0, 0) and t is not head.weight:
            assert t.numel() <= state.buffer.numel(), name
            assert t.untyped_storage().nbytes() <= 2 * state.buffer.numel() + 256 or \
                t.untyped_storage().data_ptr() <= state.buffer.data_ptr() < \
                t.untyped_storage().data_ptr() + t.untyped_storage().nbytes(), name
    assert model.df11.memory_bytes()["cpu"] < 2 * state.buffer.numel() + 1024


@pytest.mark.parametrize("batch", [1, 2])
@torch.no_grad()
def test_logits_equal_at_token_counts(folders, batch):
    _, ref, model = folders
    for length in (1, 2, 3, 5, 7, 8, 13, 16, 31, 33, 47, 64):
        ids = models.llm_inputs(ref.config.vocab_size, batch, length=length, seed=length)
        check_bits(model(input_ids=ids).logits, ref(input_ids=ids).logits)


@torch.no_grad()
def test_linear_equals_whole_linear(folders):
    """A block's largest Linear (decoded into the buffer within its forward) against F.linear
    on the BF16 weight, for inputs of 1 to 64 rows, 2-D and 3-D, contiguous or a slice (as
    generate's last position is)."""
    _, ref, model = folders
    mine, theirs = model.model.layers[0].mlp.down_proj, ref.model.layers[0].mlp.down_proj
    assert isinstance(mine, df11.modules.PartsLinear)
    decoder = df11._ops._DECODERS[mine._df11_parts_key]
    g = torch.Generator().manual_seed(0)
    for m in list(range(1, 18)) + [31, 32, 33, 63, 64]:
        x = torch.randn((2, m + 1, theirs.in_features), generator=g).to(torch.bfloat16)
        for arg in (x[0, :m], x[:, :m], x[:, -1:]):
            check_bits(mine(arg), theirs(arg))
            check_bits(decoder.linear(arg), theirs(arg))


@torch.no_grad()
def test_greedy_equal(folders):
    _, ref, model = folders
    ids = models.llm_inputs(ref.config.vocab_size, 2, length=9, seed=3)
    kw = dict(do_sample=False, max_new_tokens=8, min_new_tokens=8, eos_token_id=None,
              pad_token_id=0, attention_mask=torch.ones_like(ids))
    assert torch.equal(model.generate(input_ids=ids, **kw), ref.generate(input_ids=ids, **kw))


def test_backward_through_a_linear(folders):
    """A backward pass through a coded Linear (its weight decoded into a tensor of its own for
    autograd): the input's gradient equals BF16's."""
    _, ref, model = folders
    mine, theirs = model.model.layers[1].mlp.up_proj, ref.model.layers[1].mlp.up_proj
    assert isinstance(mine, df11.modules.PartsLinear)
    g = torch.Generator().manual_seed(1)
    x = torch.randn((3, theirs.in_features), generator=g).to(torch.bfloat16)
    grad_out = torch.randn((3, theirs.out_features), generator=g).to(torch.bfloat16)
    a, b = x.clone().requires_grad_(), x.clone().requires_grad_()
    mine(a).backward(grad_out)
    theirs(b).backward(grad_out)
    check_bits(a.grad, b.grad)


def test_rows_lookup(folders):
    _, ref, model = folders
    emb, want = model.get_input_embeddings(), ref.get_input_embeddings()
    ids = torch.tensor([[0, 5, 5, ref.config.vocab_size - 1], [7, 0, 3, 5]])
    with torch.no_grad():
        check_bits(emb(ids), want(ids))
    with pytest.raises(IndexError):
        emb(torch.tensor([ref.config.vocab_size]))
    with pytest.raises(IndexError):
        emb(torch.tensor([-1]))


def test_decode_group_range(folders):
    """df11_decode_group_range gives the slices of df11_decode_group's output, and refuses a
    range outside the group."""
    _, _, model = folders
    folder = model.df11.folder
    g = max(range(folder.group_count()), key=folder.group_element_count)
    n = folder.group_element_count(g)
    whole = torch.empty(n, dtype=torch.bfloat16)
    folder.decode_group(g, whole.data_ptr(), 2 * n)
    for first, count in ((0, 1), (0, n), (1, 4097), (n // 3, n // 3 + 1), (n - 7, 7), (n, 0)):
        part = torch.empty(count + 1, dtype=torch.bfloat16)
        folder.decode_group_range(g, first, part.data_ptr(), 2 * count)
        check_bits(part[:count], whole[first:first + count])
    with pytest.raises(df11.Df11Error):
        folder.decode_group_range(g, n - 3, part.data_ptr(), 8)
    with pytest.raises(df11.Df11Error):
        folder.decode_group_range(g, 0, part.data_ptr(), 3)


@torch.no_grad()
def test_segments_in_any_order(folders):
    """Linears stored side by side share one decode (a Segment); called in any order, with
    other writes to the buffer between them (another block's segment or Linear), each
    reads its own weight: every output equals BF16's Linear's."""
    _, ref, model = folders
    parts = df11._ops._DECODERS
    attn = model.model.layers[0].self_attn
    segments = [parts[m._df11_parts_key].segment for m in
                (attn.q_proj, attn.k_proj, attn.v_proj, attn.o_proj)]
    assert any(segments.count(s) > 1 for s in segments if s is not None)
    names = ["model.layers.0.self_attn.v_proj", "model.layers.0.self_attn.q_proj",
             "lm_head", "model.layers.0.self_attn.k_proj", "model.layers.1.self_attn.q_proj",
             "model.layers.0.self_attn.o_proj", "model.layers.0.self_attn.q_proj",
             "model.layers.0.mlp.down_proj", "model.layers.0.self_attn.k_proj"]
    g = torch.Generator().manual_seed(2)
    for name in names:
        mine, theirs = model.get_submodule(name), ref.get_submodule(name)
        x = torch.randn((1, 3, theirs.in_features), generator=g).to(torch.bfloat16)
        check_bits(mine(x), theirs(x))


@torch.no_grad()
def test_torch_threads_left_alone(folders):
    """torch's CPU kernels give different bits on different thread counts on some CPUs (a
    16-core Xeon: BF16 logits at 1 thread differ from those at 16), so a forward pass runs on
    the caller's count, and the logits equal BF16's at that count."""
    _, ref, model = folders
    seen = []
    hook = model.model.layers[0].register_forward_pre_hook(
        lambda m, a: seen.append(torch.get_num_threads()))
    before = torch.get_num_threads()
    try:
        ids = models.llm_inputs(ref.config.vocab_size, 1, length=4)
        for n in (2, 1):
            torch.set_num_threads(n)
            check_bits(model(input_ids=ids).logits, ref(input_ids=ids).logits)
            assert seen[-1] == n and torch.get_num_threads() == n
    finally:
        hook.remove()
        torch.set_num_threads(before)


def test_rows_eligible_by_mode_device_and_tie():
    """Which embeddings rows decodes serve: in the default mode on a GPU or the CPU, tied or
    not; in a layout mode (exec, compact: GPU only) an untied one only, since a tied head
    multiplies from the embedding's weight; never with cpu_offload, a resident group, a group
    of several members or one that does not start at 0, or an embedding with max_norm."""
    from df11.decoders import rows_eligible
    from df11.groups import Group, Member

    emb = torch.nn.Embedding(10, 4)
    one = Group(0, "embed", "model.safetensors", 40, [Member(0, "embed.weight", (10, 4), 0)])
    cuda, cpu = torch.device("cuda", 0), torch.device("cpu")

    def ok(group=one, device=cuda, offload=False, mode="decode", resident=(), tied=False,
           module=emb):
        return rows_eligible(module, group, device, offload, mode, set(resident), tied)

    for tied in (False, True):
        assert ok(tied=tied) and ok(device=cpu, tied=tied)
    for mode in ("exec", "compact"):
        assert ok(mode=mode)
        assert not ok(mode=mode, tied=True)
        assert not ok(mode=mode, device=cpu)
    assert not ok(offload=True)
    assert not ok(resident=("embed",))
    assert not ok(device=torch.device("meta"))
    two = Group(0, "embed", "model.safetensors", 80, [Member(0, "a", (10, 4), 0),
                                                     Member(1, "b", (10, 4), 40)])
    assert not ok(group=two)
    late = Group(0, "embed", "model.safetensors", 80, [Member(0, "a", (10, 4), 40)])
    assert not ok(group=late)
    assert not ok(module=torch.nn.Embedding(10, 4, max_norm=1.0))
