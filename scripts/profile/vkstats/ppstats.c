// VK_LAYER_PP_stats: a Vulkan layer that asks the driver for every compute pipeline's statistics
// (VK_KHR_pipeline_executable_properties: on NVIDIA the register count, local and shared memory)
// and appends one line per pipeline to the file named by $PPSTATS_OUT (else stderr):
//     wg=X,Y,Z <statistic>=<value>;...
// The workgroup size comes from the shader module's SPIR-V (OpExecutionMode LocalSize). Used by
// scripts/profile/kernel_stats.py; build with build.sh. Vulkan gives no other view of registers.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vulkan/vulkan.h>
#include <vulkan/vk_layer.h>

#define EXPORT __attribute__((visibility("default")))
#define EXT VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME

static PFN_vkGetInstanceProcAddr next_gipa;
static PFN_vkGetDeviceProcAddr next_gdpa;
static VkInstance g_instance;
static int g_enabled;

// shader module -> workgroup size, from its SPIR-V
#define MAX_MODULES 4096
static struct { VkShaderModule m; uint32_t size[3]; } g_modules[MAX_MODULES];
static int g_n_modules;

static FILE *out(void) {
    const char *path = getenv("PPSTATS_OUT");
    FILE *f = path ? fopen(path, "a") : NULL;
    return f ? f : stderr;
}

static void done(FILE *f) {
    if (f != stderr) fclose(f);
}

static VkResult VKAPI_CALL pp_CreateInstance(const VkInstanceCreateInfo *ci, const VkAllocationCallbacks *a,
                                             VkInstance *inst) {
    VkLayerInstanceCreateInfo *li = (VkLayerInstanceCreateInfo *)ci->pNext;
    while (li && !(li->sType == VK_STRUCTURE_TYPE_LOADER_INSTANCE_CREATE_INFO && li->function == VK_LAYER_LINK_INFO))
        li = (VkLayerInstanceCreateInfo *)li->pNext;
    if (!li) return VK_ERROR_INITIALIZATION_FAILED;
    next_gipa = li->u.pLayerInfo->pfnNextGetInstanceProcAddr;
    li->u.pLayerInfo = li->u.pLayerInfo->pNext;
    PFN_vkCreateInstance create = (PFN_vkCreateInstance)next_gipa(VK_NULL_HANDLE, "vkCreateInstance");
    VkResult r = create(ci, a, inst);
    if (r == VK_SUCCESS) g_instance = *inst;
    return r;
}

// The device is created with the extension and its feature switched on, where the driver has it.
static VkResult VKAPI_CALL pp_CreateDevice(VkPhysicalDevice pd, const VkDeviceCreateInfo *ci,
                                           const VkAllocationCallbacks *a, VkDevice *dev) {
    VkLayerDeviceCreateInfo *li = (VkLayerDeviceCreateInfo *)ci->pNext;
    while (li && !(li->sType == VK_STRUCTURE_TYPE_LOADER_DEVICE_CREATE_INFO && li->function == VK_LAYER_LINK_INFO))
        li = (VkLayerDeviceCreateInfo *)li->pNext;
    if (!li) return VK_ERROR_INITIALIZATION_FAILED;
    PFN_vkGetInstanceProcAddr gipa = li->u.pLayerInfo->pfnNextGetInstanceProcAddr;
    next_gdpa = li->u.pLayerInfo->pfnNextGetDeviceProcAddr;
    li->u.pLayerInfo = li->u.pLayerInfo->pNext;
    PFN_vkCreateDevice create = (PFN_vkCreateDevice)gipa(g_instance, "vkCreateDevice");
    PFN_vkEnumerateDeviceExtensionProperties enum_ext =
        (PFN_vkEnumerateDeviceExtensionProperties)gipa(g_instance, "vkEnumerateDeviceExtensionProperties");
    uint32_t n = 0;
    enum_ext(pd, NULL, &n, NULL);
    VkExtensionProperties *props = calloc(n ? n : 1, sizeof *props);
    enum_ext(pd, NULL, &n, props);
    int have = 0;
    for (uint32_t i = 0; i < n; i++) have |= !strcmp(props[i].extensionName, EXT);
    free(props);
    if (!have) {
        FILE *f = out();
        fprintf(f, "no %s on this device\n", EXT);
        done(f);
        return create(pd, ci, a, dev);
    }
    VkDeviceCreateInfo c = *ci;
    const char **names = calloc(ci->enabledExtensionCount + 1, sizeof *names);
    int listed = 0;
    for (uint32_t i = 0; i < ci->enabledExtensionCount; i++) {
        names[i] = ci->ppEnabledExtensionNames[i];
        listed |= !strcmp(names[i], EXT);
    }
    if (!listed) names[c.enabledExtensionCount++] = EXT;
    c.ppEnabledExtensionNames = names;
    VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR feature = {
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR, (void *)ci->pNext, VK_TRUE};
    c.pNext = &feature;
    VkResult r = create(pd, &c, a, dev);
    free(names);
    g_enabled = r == VK_SUCCESS;
    return r;
}

static VkResult VKAPI_CALL pp_CreateShaderModule(VkDevice dev, const VkShaderModuleCreateInfo *ci,
                                                 const VkAllocationCallbacks *a, VkShaderModule *m) {
    PFN_vkCreateShaderModule create = (PFN_vkCreateShaderModule)next_gdpa(dev, "vkCreateShaderModule");
    VkResult r = create(dev, ci, a, m);
    if (r != VK_SUCCESS || g_n_modules == MAX_MODULES) return r;
    const uint32_t *w = ci->pCode;
    size_t n = ci->codeSize / 4;
    for (size_t i = 5; i < n;) {  // instructions after the 5-word header
        uint32_t len = w[i] >> 16, op = w[i] & 0xffff;
        if (len == 0) break;
        if (op == 16 && len >= 6 && w[i + 2] == 17) {  // OpExecutionMode ... LocalSize x y z
            g_modules[g_n_modules].m = *m;
            memcpy(g_modules[g_n_modules].size, &w[i + 3], 3 * sizeof(uint32_t));
            g_n_modules++;
            break;
        }
        i += len;
    }
    return r;
}

static void report(VkDevice dev, VkPipeline p, VkShaderModule m) {
    PFN_vkGetPipelineExecutablePropertiesKHR get_props =
        (PFN_vkGetPipelineExecutablePropertiesKHR)next_gdpa(dev, "vkGetPipelineExecutablePropertiesKHR");
    PFN_vkGetPipelineExecutableStatisticsKHR get_stats =
        (PFN_vkGetPipelineExecutableStatisticsKHR)next_gdpa(dev, "vkGetPipelineExecutableStatisticsKHR");
    if (!get_props || !get_stats) return;
    uint32_t size[3] = {0, 0, 0};
    for (int i = g_n_modules - 1; i >= 0; i--)
        if (g_modules[i].m == m) {
            memcpy(size, g_modules[i].size, sizeof size);
            break;
        }
    VkPipelineInfoKHR info = {VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR, NULL, p};
    uint32_t n_exe = 0;
    get_props(dev, &info, &n_exe, NULL);
    FILE *f = out();
    for (uint32_t e = 0; e < n_exe; e++) {
        VkPipelineExecutableInfoKHR exe = {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR, NULL, p, e};
        uint32_t n = 0;
        get_stats(dev, &exe, &n, NULL);
        VkPipelineExecutableStatisticKHR *st = calloc(n ? n : 1, sizeof *st);
        for (uint32_t i = 0; i < n; i++) st[i].sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR;
        get_stats(dev, &exe, &n, st);
        fprintf(f, "wg=%u,%u,%u", size[0], size[1], size[2]);
        for (uint32_t i = 0; i < n; i++) {
            fprintf(f, " %s=", st[i].name);
            switch (st[i].format) {
            case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: fprintf(f, "%u", st[i].value.b32); break;
            case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: fprintf(f, "%lld", (long long)st[i].value.i64); break;
            case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR:
                fprintf(f, "%llu", (unsigned long long)st[i].value.u64);
                break;
            default: fprintf(f, "%g", st[i].value.f64);
            }
            fprintf(f, ";");
        }
        fprintf(f, "\n");
        free(st);
    }
    done(f);
}

static VkResult VKAPI_CALL pp_CreateComputePipelines(VkDevice dev, VkPipelineCache cache, uint32_t n,
                                                     const VkComputePipelineCreateInfo *ci,
                                                     const VkAllocationCallbacks *a, VkPipeline *pipes) {
    PFN_vkCreateComputePipelines create = (PFN_vkCreateComputePipelines)next_gdpa(dev, "vkCreateComputePipelines");
    if (!g_enabled) return create(dev, cache, n, ci, a, pipes);
    VkComputePipelineCreateInfo *c = calloc(n ? n : 1, sizeof *c);
    for (uint32_t i = 0; i < n; i++) {
        c[i] = ci[i];
        c[i].flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
    }
    VkResult r = create(dev, cache, n, c, a, pipes);
    free(c);
    if (r == VK_SUCCESS)
        for (uint32_t i = 0; i < n; i++) report(dev, pipes[i], ci[i].stage.module);
    return r;
}

EXPORT VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL vkGetDeviceProcAddr(VkDevice dev, const char *name);

EXPORT VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL vkGetInstanceProcAddr(VkInstance inst, const char *name) {
    if (!strcmp(name, "vkGetInstanceProcAddr")) return (PFN_vkVoidFunction)vkGetInstanceProcAddr;
    if (!strcmp(name, "vkCreateInstance")) return (PFN_vkVoidFunction)pp_CreateInstance;
    if (!strcmp(name, "vkCreateDevice")) return (PFN_vkVoidFunction)pp_CreateDevice;
    PFN_vkVoidFunction f = vkGetDeviceProcAddr(VK_NULL_HANDLE, name);
    if (f) return f;
    return next_gipa ? next_gipa(inst, name) : NULL;
}

EXPORT VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL vkGetDeviceProcAddr(VkDevice dev, const char *name) {
    if (!strcmp(name, "vkGetDeviceProcAddr")) return (PFN_vkVoidFunction)vkGetDeviceProcAddr;
    if (!strcmp(name, "vkCreateShaderModule")) return (PFN_vkVoidFunction)pp_CreateShaderModule;
    if (!strcmp(name, "vkCreateComputePipelines")) return (PFN_vkVoidFunction)pp_CreateComputePipelines;
    if (dev == VK_NULL_HANDLE) return NULL;
    return next_gdpa ? next_gdpa(dev, name) : NULL;
}
