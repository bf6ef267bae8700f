"""What work costs: FLOPs and bytes of an operator from its shapes (op_cost.py, conv_cost.py,
cost_common.py), the roofline of a trace's operators and of its top ones (roofline.py,
roofline_top.py), the analytic FLOPs of a GPT decoder (flops.py), and Nsight Compute's
measured kernels, read from its CSV and placed on the same roofline (ncu.py). Within
analysis/ it may import timeline/ (the Context the roofline reads), never graph/, job/ or
run/; below it, trace/, hardware/, recordtypes/ and the foundations.
"""
