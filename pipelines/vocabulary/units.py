"""Unit conversions, declared once. Every table stores SI base units (J, s, W); these scale them for readers.

A leaf: imports nothing. Names read as "how many of the first unit in one of the second":
``J_PER_MWH`` joules in one megawatt-hour, so ``energy_j / J_PER_MWH`` is MWh.
"""

#: Seconds in an hour and in a day.
S_PER_H = 3_600.0
S_PER_DAY = 86_400.0
#: Joules in a megajoule, a kilowatt-hour and a megawatt-hour.
J_PER_MJ = 1e6
J_PER_KWH = 3.6e6
J_PER_MWH = 3.6e9
#: Kilowatt-hours in a megawatt-hour.
KWH_PER_MWH = 1_000.0
#: Kilowatts in a watt.
KW_PER_W = 1e-3
